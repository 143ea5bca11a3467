#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kinetrace/config.h"

// Every key of kinetrace::Config, one row each: the one table that Config::set and
// Config::fromEnvironment read by, that `kinetrace run` makes its options from (and exports
// to the programs it traces as KINETRACE_<KEY>), and that `kinetrace help settings` prints
// for docs/CONFIGURATION.md. A new setting is a row in settings.cpp, its field in Config and
// the code that uses its value.

namespace kinetrace::detail {

// Why a value is refused, in words that name the key ("memory_mb must be a whole number
// from 1 to 1048576, got \"0\""). Each caller says where the value came from: Config::set
// ("config: ..."), the environment ("environment variable KINETRACE_MEMORY_MB: ..."), the
// command line ("kinetrace run: --memory-mb 0: ...").
class SettingRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Setting {
  const char* key;           // "memory_mb": Config::set's key; KINETRACE_MEMORY_MB
  const char* valueName;     // "N": what the help calls the value
  const char* defaultValue;  // as the docs show it ("1024", "until exit")
  // What it does and what it accepts: `kinetrace help settings`, the docs' table, and the
  // help of its `kinetrace run` option.
  const char* help;
  // `kinetrace run`'s option for it ("--memory-mb"); nullptr: none (the variable still
  // reaches the traced processes from the environment).
  const char* runOption;
  const char* runShortOption;  // "-a", or nullptr
  // Reads `value` into `config`. Throws SettingRefused.
  void (*read)(Config& config, std::string_view value);
};

// The table, in the order `help` lists it.
const std::vector<Setting>& settings();

// The row of a key (any case, blanks around it ignored); nullptr when there is none.
const Setting* findSetting(std::string_view key);

// "output, activities, ...": every key, for messages about an unknown one.
std::string settingKeys();

// "KINETRACE_MEMORY_MB".
std::string environmentVariableOf(const Setting& setting);

// The table as Markdown (key, variable, `kinetrace run` option, meaning, default): what
// `kinetrace help settings` prints and docs/CONFIGURATION.md holds.
std::string settingsMarkdown();

// Internal parsers the table's rows share with the public API (ActivitySet::parse): each
// throws SettingRefused naming `key`.
ActivitySet parseActivities(std::string_view key, std::string_view list);

}  // namespace kinetrace::detail
