#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli_options.h"

// The option parser: a command is a table of its options, from which both its command line
// is read and its `help` option list is printed, so the two cannot disagree.

namespace kinetrace::cli::detail {

// ---- the table's shape ----------------------------------------------------------------

// One option of a command: its spellings, its value's name in the help (nullptr for a
// flag, which takes no value), its help text, and where its value goes.
template <typename Options>
struct OptionSpec {
  const char* longName;   // "--output"
  const char* shortName;  // "-o", or nullptr
  const char* valueName;  // "DIR"; nullptr: a flag
  // nullptr: shares the help line of the option before it (a pair: --nvtx, --no-nvtx).
  const char* help;
  // Takes the option as its long name, for messages.
  std::function<void(Options& options, const char* option, const std::string& value)> apply;
};

// Where the words of a command line that are not options go.
enum class Operands {
  None,          // every word is an option
  Anywhere,      // among the options, and every word after "--"
  ProgramAfter,  // the first word that is not an option and every word after it
};

template <typename Options>
struct CommandSpec {
  const char* name;
  Command::Kind kind;
  Options Command::*options;
  std::vector<OptionSpec<Options>> table;
  Operands operands;
  // Takes the operands and checks the command line as a whole. Throws UsageError.
  void (*finish)(Options& options, std::vector<std::string> operands);
  const char* usage;  // the help above the option list
  const char* notes;  // the help below it
};

// Every command takes these too: printing the help ends the parsing.
inline constexpr const char* kHelpLong = "--help";
inline constexpr const char* kHelpShort = "-h";

// ---- parsing --------------------------------------------------------------------------

template <typename Options>
Command parseWith(const CommandSpec<Options>& spec, const std::vector<std::string>& args) {
  Command command;
  command.kind = spec.kind;
  Options& options = command.*spec.options;
  std::vector<std::string> operands;
  const auto rest = [&](std::size_t from) {
    operands.insert(operands.end(), args.begin() + static_cast<std::ptrdiff_t>(from), args.end());
  };
  const std::string prefix = std::string("kinetrace ") + spec.name + ": ";
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    // A lone "-" is an operand (standard input, by convention), never an option.
    const bool optionLike = word.size() > 1 && word[0] == '-';
    if (spec.operands != Operands::None && word == "--") {
      rest(i + 1);
      break;
    }
    if (spec.operands == Operands::ProgramAfter && (!optionLike || word == "-")) {
      rest(i);
      break;
    }
    if (spec.operands == Operands::Anywhere && !optionLike) {
      operands.push_back(word);
      continue;
    }

    std::string name = word;
    std::string value;
    bool inlineValue = false;
    const std::size_t equals = word.find('=');
    if (word.rfind("--", 0) == 0 && equals != std::string::npos) {
      name = word.substr(0, equals);
      value = word.substr(equals + 1);
      inlineValue = true;
    }
    const OptionSpec<Options>* option = nullptr;
    for (const OptionSpec<Options>& candidate : spec.table) {
      if (name == candidate.longName ||
          (candidate.shortName != nullptr && name == candidate.shortName)) {
        option = &candidate;
      }
    }
    const bool help = name == kHelpLong || name == kHelpShort;
    if (option == nullptr && !help) {
      throw UsageError(prefix + "unknown option '" + word + "' (see 'kinetrace " + spec.name +
                       " --help')");
    }
    const char* longName = help ? kHelpLong : option->longName;
    const bool takesValue = !help && option->valueName != nullptr;
    if (!takesValue && inlineValue) {
      throw UsageError(prefix + "option '" + longName + "' takes no value");
    }
    if (help) {
      command.kind = Command::Kind::Help;
      command.helpTopic = spec.name;
      return command;
    }
    if (takesValue && !inlineValue) {
      if (i + 1 == args.size()) {
        throw UsageError(prefix + "option '" + longName + "' needs a value");
      }
      value = args[++i];
    }
    option->apply(options, option->longName, value);
  }
  spec.finish(options, std::move(operands));
  return command;
}

// ---- help -----------------------------------------------------------------------------

inline constexpr std::size_t kHelpWidth = 96;
// A longer name has its text start on the line below.
inline constexpr std::size_t kNameColumnMax = 28;

// `text` wrapped at kHelpWidth, every line after the first indented by `column`; the first
// line continues from `used` characters.
inline std::string wrapped(const std::string& text, std::size_t column, std::size_t used) {
  std::string out;
  std::size_t lineLength = used;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(begin, end - begin);
    const bool firstOfLine = lineLength <= column;
    if (!firstOfLine && lineLength + 1 + word.size() > kHelpWidth) {
      out += "\n" + std::string(column, ' ');
      lineLength = column;
    } else if (!firstOfLine) {
      out += ' ';
      ++lineLength;
    }
    out += word;
    lineLength += word.size();
    begin = end + 1;
  }
  return out + "\n";
}

// "--output DIR": how the help names an option.
template <typename Options>
std::string spelled(const OptionSpec<Options>& option) {
  std::string name = option.longName;
  if (option.valueName != nullptr) name += std::string(" ") + option.valueName;
  return name;
}

struct HelpLine {
  std::string name;
  std::string text;
};

template <typename Options>
std::vector<HelpLine> helpLines(const CommandSpec<Options>& spec) {
  std::vector<HelpLine> lines;
  for (const OptionSpec<Options>& option : spec.table) {
    if (option.help == nullptr && !lines.empty()) {
      lines.back().name += ", " + spelled(option);
      continue;
    }
    const std::string shortName =
        option.shortName != nullptr ? std::string(option.shortName) + ", " : "    ";
    lines.push_back({"  " + shortName + spelled(option), option.help ? option.help : ""});
  }
  lines.push_back({std::string("  ") + kHelpShort + ", " + kHelpLong, "this text"});
  return lines;
}

template <typename Options>
std::string helpWith(const CommandSpec<Options>& spec) {
  const std::vector<HelpLine> lines = helpLines(spec);
  std::size_t widest = 0;
  for (const HelpLine& line : lines) {
    if (line.name.size() <= kNameColumnMax) widest = std::max(widest, line.name.size());
  }
  const std::size_t column = widest + 2;
  std::string text = std::string(spec.usage) + "\noptions:\n";
  for (const HelpLine& line : lines) {
    text += line.name;
    if (line.name.size() > kNameColumnMax) {
      text += "\n" + std::string(column, ' ');
    } else {
      text += std::string(column - line.name.size(), ' ');
    }
    text += wrapped(line.text, column, column);
  }
  if (*spec.notes != '\0') text += std::string("\n") + spec.notes;
  return text;
}

template <typename Options>
std::vector<std::string> namesIn(const CommandSpec<Options>& spec) {
  std::vector<std::string> names;
  for (const OptionSpec<Options>& option : spec.table) {
    names.push_back(option.longName);
    if (option.shortName != nullptr) names.push_back(option.shortName);
  }
  names.push_back(kHelpLong);
  names.push_back(kHelpShort);
  return names;
}

}  // namespace kinetrace::cli::detail
