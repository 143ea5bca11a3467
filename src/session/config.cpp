#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>
#include <vector>

#include "kinetrace/config.h"
#include "kinetrace/error.h"

extern char** environ;

namespace kinetrace {
namespace {

struct ActivityName {
  const char* name;
  Activity activity;
};
constexpr ActivityName kActivityNames[] = {
    {"host", Activity::Host},         {"kernel", Activity::Kernel},
    {"memcpy", Activity::Memcpy},     {"memset", Activity::Memset},
    {"sync", Activity::Sync},         {"memory", Activity::Memory},
    {"overhead", Activity::Overhead}, {"launch", Activity::Launch},
    {"cuda_runtime", Activity::RuntimeAll}, {"cuda_driver", Activity::DriverAll},
};

std::string knownActivityNames() {
  std::string names;
  for (const auto& entry : kActivityNames) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names + ", default, all";
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::size_t parseSize(std::string_view key, std::string_view value, std::size_t minimum) {
  std::string_view text = trim(value);
  std::size_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || parsed < minimum) {
    throw Error(fmt::format("kinetrace config: {} must be a whole number >= {}, got \"{}\"", key,
                            minimum, value));
  }
  return parsed;
}

}  // namespace

ActivitySet ActivitySet::defaults() {
  return ActivitySet()
      .add(Activity::Host)
      .add(Activity::Kernel)
      .add(Activity::Memcpy)
      .add(Activity::Memset)
      .add(Activity::Sync)
      .add(Activity::Memory)
      .add(Activity::Overhead)
      .add(Activity::Launch);
}

ActivitySet ActivitySet::all() {
  ActivitySet set;
  for (const auto& entry : kActivityNames) set.add(entry.activity);
  return set;
}

ActivitySet ActivitySet::parse(std::string_view list) {
  ActivitySet set;
  std::size_t begin = 0;
  bool any = false;
  while (begin <= list.size()) {
    std::size_t comma = list.find(',', begin);
    if (comma == std::string_view::npos) comma = list.size();
    std::string name = lower(trim(list.substr(begin, comma - begin)));
    begin = comma + 1;
    if (name.empty()) continue;
    any = true;
    if (name == "default") {
      set = ActivitySet(set.bits() | defaults().bits());
      continue;
    }
    if (name == "all") {
      set = ActivitySet(set.bits() | all().bits());
      continue;
    }
    auto found = std::find_if(std::begin(kActivityNames), std::end(kActivityNames),
                              [&](const ActivityName& entry) { return name == entry.name; });
    if (found == std::end(kActivityNames)) {
      throw Error(fmt::format("kinetrace config: unknown activity \"{}\" (known: {})", name,
                              knownActivityNames()));
    }
    set.add(found->activity);
  }
  if (!any) throw Error("kinetrace config: activities is empty (known: " + knownActivityNames() + ")");
  return set;
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

void Config::set(std::string_view key, std::string_view value) {
  std::string name = lower(trim(key));
  if (name == "output") {
    output = std::string(trim(value));
  } else if (name == "activities") {
    activities = ActivitySet::parse(value);
  } else if (name == "log_level") {
    std::string level = lower(trim(value));
    if (level == "error") logLevel = LogLevel::Error;
    else if (level == "warning" || level == "warn") logLevel = LogLevel::Warning;
    else if (level == "info") logLevel = LogLevel::Info;
    else if (level == "debug") logLevel = LogLevel::Debug;
    else {
      throw Error(fmt::format(
          "kinetrace config: log_level must be error, warning, info or debug, got \"{}\"", value));
    }
  } else if (name == "host_buffer_mb") {
    hostBufferMb = parseSize(name, value, 1);
  } else if (name == "gpu_buffer_mb") {
    gpuBufferMb = parseSize(name, value, 1);
  } else if (name == "gpu_buffer_kb") {
    gpuBufferKb = parseSize(name, value, 16);
  } else {
    throw Error(fmt::format(
        "kinetrace config: unknown key \"{}\" (known: output, activities, log_level, "
        "host_buffer_mb, gpu_buffer_mb, gpu_buffer_kb)",
        key));
  }
}

Config Config::fromEnvironment() {
  Config config;
  constexpr std::string_view kPrefix = "KINETRACE_";
  // Variables read elsewhere, not configuration keys.
  constexpr std::string_view kNotConfig[] = {"KINETRACE_CLOCK"};
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    if (variable.substr(0, kPrefix.size()) != kPrefix) continue;
    std::size_t equals = variable.find('=');
    std::string_view name = variable.substr(0, equals);
    std::string_view value = equals == std::string_view::npos ? "" : variable.substr(equals + 1);
    if (std::find(std::begin(kNotConfig), std::end(kNotConfig), name) != std::end(kNotConfig)) continue;
    try {
      config.set(name.substr(kPrefix.size()), value);
    } catch (const Error& error) {
      std::string message = error.what();
      const std::string_view configPrefix = "kinetrace config: ";
      if (message.rfind(configPrefix, 0) == 0) message.erase(0, configPrefix.size());
      throw Error(fmt::format("kinetrace: environment variable {}: {}", name, message));
    }
  }
  return config;
}

}  // namespace kinetrace
