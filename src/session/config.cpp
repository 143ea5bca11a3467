#include "kinetrace/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "session/settings.h"
#include "support/log.h"
#include "support/text.h"

extern char** environ;

namespace kinetrace {

using detail::trim;

namespace {

struct ActivityName {
  const char* name;
  Activity activity;
};
constexpr ActivityName kActivityNames[] = {
    {"host", Activity::Host},
    {"kernel", Activity::Kernel},
    {"memcpy", Activity::Memcpy},
    {"memset", Activity::Memset},
    {"sync", Activity::Sync},
    {"memory", Activity::Memory},
    {"overhead", Activity::Overhead},
    {"launch", Activity::Launch},
    {"cuda_runtime", Activity::RuntimeAll},
    {"cuda_driver", Activity::DriverAll},
};

std::string knownActivityNames() {
  return detail::joinNames(kActivityNames, [](const auto& entry) { return entry.name; }) +
         ", default, all";
}

}  // namespace

ActivitySet ActivitySet::defaults() {
  return ActivitySet()
      .add(Activity::Host)
      .add(Activity::Kernel)
      .add(Activity::Memcpy)
      .add(Activity::Memset)
      .add(Activity::Launch);
}

ActivitySet ActivitySet::all() {
  ActivitySet set;
  for (const auto& entry : kActivityNames) set.add(entry.activity);
  return set;
}

ActivitySet ActivitySet::parse(std::string_view list) {
  try {
    return detail::parseActivities("activities", list);
  } catch (const detail::SettingRefused& refused) {
    throw Error(std::string("config: ") + refused.what(), ErrorKind::Setting);
  }
}

std::string ActivitySet::toString() const {
  std::string out;
  for (const auto& entry : kActivityNames) {
    if (!has(entry.activity)) continue;
    if (!out.empty()) out += ',';
    out += entry.name;
  }
  return out;
}

namespace detail {

ActivitySet parseActivities(std::string_view key, std::string_view list) {
  ActivitySet set;
  std::size_t begin = 0;
  bool any = false;
  while (begin <= list.size()) {
    std::size_t comma = list.find(',', begin);
    if (comma == std::string_view::npos) comma = list.size();
    std::string name(trim(list.substr(begin, comma - begin)));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    begin = comma + 1;
    if (name.empty()) continue;
    any = true;
    if (name == "default") {
      set = ActivitySet(set.bits() | ActivitySet::defaults().bits());
      continue;
    }
    if (name == "all") {
      set = ActivitySet(set.bits() | ActivitySet::all().bits());
      continue;
    }
    auto found = std::find_if(std::begin(kActivityNames), std::end(kActivityNames),
                              [&](const ActivityName& entry) { return name == entry.name; });
    if (found == std::end(kActivityNames)) {
      throw SettingRefused(
          fmt::format("unknown activity \"{}\" (known: {})", name, knownActivityNames()));
    }
    set.add(found->activity);
  }
  if (!any) throw SettingRefused(fmt::format("{} is empty (known: {})", key, knownActivityNames()));
  return set;
}

}  // namespace detail

void Config::set(std::string_view key, std::string_view value) {
  const detail::Setting* setting = detail::findSetting(key);
  if (setting == nullptr) {
    throw Error(fmt::format("config: unknown key \"{}\" (known: {})", key, detail::settingKeys()),
                ErrorKind::Setting);
  }
  try {
    setting->read(*this, value);
  } catch (const detail::SettingRefused& refused) {
    throw Error(std::string("config: ") + refused.what(), ErrorKind::Setting);
  }
}

Config Config::fromEnvironment() {
  Config config;
  constexpr std::string_view kPrefix = "KINETRACE_";
  std::vector<std::string> unknown;
  // Read by other parts (the trigger channel, the injection's dynolog client), not settings,
  // and not to be called unknown.
  constexpr std::string_view kReadElsewhere[] = {"KINETRACE_CONTROL_DIR", "KINETRACE_DYNOLOG"};
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    if (variable.substr(0, kPrefix.size()) != kPrefix) continue;
    std::size_t equals = variable.find('=');
    std::string_view name = variable.substr(0, equals);
    if (std::find(std::begin(kReadElsewhere), std::end(kReadElsewhere), name) !=
        std::end(kReadElsewhere)) {
      continue;
    }
    const detail::Setting* setting = detail::findSetting(name.substr(kPrefix.size()));
    if (setting == nullptr) {
      unknown.emplace_back(name);
      continue;
    }
    std::string_view value = equals == std::string_view::npos ? "" : variable.substr(equals + 1);
    try {
      setting->read(config, value);
    } catch (const detail::SettingRefused& refused) {
      throw Error(fmt::format("environment variable {}: {}", name, refused.what()),
                  ErrorKind::Setting);
    }
  }
  // A typo, or a key of a newer kinetrace: worth a word, not worth stopping a training job.
  // Said once per process per name, however many Profilers read the environment.
  static std::mutex reportedMutex;
  static std::vector<std::string> reported;
  std::lock_guard<std::mutex> lock(reportedMutex);
  for (const std::string& name : unknown) {
    if (std::find(reported.begin(), reported.end(), name) != reported.end()) continue;
    reported.push_back(name);
    detail::log(LogLevel::Warning,
                "environment variable {} is not a kinetrace setting and is ignored (known: {})",
                name, "KINETRACE_ + one of: " + detail::settingKeys());
  }
  return config;
}

}  // namespace kinetrace
