// The option table: the parser and `help COMMAND` are made from one table per command, so
// every option parsed is listed, every option listed is parsed, and mistakes name the option.
#include "option_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_options.h"

namespace kinetrace::cli {
namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::string messageOf(const std::vector<std::string>& args) {
  try {
    parseCommandLine(args);
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exitCode(), 2) << error.what();
    return error.what();
  }
  return "(no error)";
}

// The lines of `help` from "options:" to the blank line after the list.
std::vector<std::string> optionLines(const std::string& help) {
  std::istringstream in(help.substr(help.find("\noptions:\n") + 10));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line) && !line.empty();) lines.push_back(line);
  return lines;
}

TEST(OptionTableTest, TheCommandsAreTheSevenOfTheHelp) {
  EXPECT_EQ(commandNames(), (std::vector<std::string>{"run", "summary", "convert", "merge",
                                                      "analyze", "diff", "trigger"}));
  EXPECT_CONTAINS(messageOf({"help", "profile"}),
                  "(commands: run, summary, convert, merge, analyze, diff, trigger)");
  EXPECT_CONTAINS(messageOf({"profile"}),
                  "(commands: run, summary, convert, merge, analyze, diff, trigger, help)");
}

TEST(OptionTableTest, HelpListsEveryOptionOfTheTableInItsOptionList) {
  for (const std::string& command : commandNames()) {
    const std::vector<std::string> names = optionNamesOf(command);
    ASSERT_GE(names.size(), 2u) << command;
    std::string list;
    for (const std::string& line : optionLines(helpFor(command))) list += line + "\n";
    for (const std::string& name : names) {
      // As a whole word: "--top" must not be found inside "--top-k".
      bool listed = false;
      for (std::size_t at = list.find(name); at != std::string::npos;
           at = list.find(name, at + 1)) {
        const char after = at + name.size() < list.size() ? list[at + name.size()] : '\n';
        const char before = at > 0 ? list[at - 1] : ' ';
        listed |= (before == ' ') && (after == ' ' || after == ',' || after == '\n');
      }
      EXPECT_TRUE(listed) << "kinetrace help " << command << " does not list " << name << ":\n"
                          << list;
    }
  }
}

TEST(OptionTableTest, EveryOptionOfTheTableIsParsed) {
  for (const std::string& command : commandNames()) {
    for (const std::string& name : optionNamesOf(command)) {
      // Whatever else is wrong with this command line, the option itself is known.
      const std::string message = messageOf({command, name, "x", "y", "z"});
      EXPECT_EQ(message.find("unknown option '" + name), std::string::npos) << message;
    }
  }
}

TEST(OptionTableTest, AnUnknownOptionNamesItselfAndWhereToLook) {
  for (const std::string& command : commandNames()) {
    EXPECT_CONTAINS(messageOf({command, "--no-such-option", "x"}),
                    "kinetrace " + command +
                        ": unknown option '--no-such-option' (see 'kinetrace " + command +
                        " --help')");
    EXPECT_CONTAINS(messageOf({command, "--no-such-option=3", "x"}),
                    "unknown option '--no-such-option=3'");
  }
}

TEST(OptionTableTest, AMissingValueNamesTheOptionByItsLongName) {
  const std::vector<std::vector<std::string>> lines = {
      {"run", "--output"},   {"run", "-a"},        {"summary", "--top"}, {"merge", "a", "-o"},
      {"analyze", "--json"}, {"trigger", "--pid"}, {"trigger", "-o"}};
  const std::vector<std::string> expected = {"--output", "--activities", "--top",   "--output",
                                             "--json",   "--pid",        "--output"};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_CONTAINS(messageOf(lines[i]),
                    "kinetrace " + lines[i][0] + ": option '" + expected[i] + "' needs a value");
  }
}

TEST(OptionTableTest, AFlagGivenAValueIsRefusedByName) {
  EXPECT_CONTAINS(messageOf({"convert", "--quiet=yes", "a", "b"}),
                  "kinetrace convert: option '--quiet' takes no value");
  EXPECT_CONTAINS(messageOf({"merge", "--help=me"}), "option '--help' takes no value");
}

TEST(OptionTableTest, EveryCommandReadsValuesInBothSpellings) {
  EXPECT_EQ(parseCommandLine({"summary", "--top=3", "a"}).summary.topKernels, 3u);
  EXPECT_EQ(parseCommandLine({"analyze", "--top", "4", "a"}).analyze.top, 4u);
  EXPECT_EQ(parseCommandLine({"merge", "a", "b", "--output=m.json"}).merge.output, "m.json");
  EXPECT_EQ(parseCommandLine({"trigger", "--pid=7", "--duration", "1s"}).trigger.pid, 7);
}

TEST(OptionTableTest, OptionListsStayWithinTheWidthAndAlignTheirText) {
  for (const std::string& command : commandNames()) {
    std::size_t column = 0;
    for (const std::string& line : optionLines(helpFor(command))) {
      EXPECT_LE(line.size(), detail::kHelpWidth) << command << ": " << line;
      // An option's line ("  -o, --output DIR   text", "      --top N   text"), not a
      // continuation, nor a long name whose text starts on the line below.
      const std::size_t start = line.find_first_not_of(' ');
      const std::size_t gap = line.find("  ", start);
      if (start > 6 || line[start] != '-' || gap == std::string::npos) continue;
      const std::size_t text = line.find_first_not_of(' ', gap);
      if (column == 0) column = text;
      EXPECT_EQ(text, column) << command << ": " << line;
    }
    EXPECT_GT(column, 0u) << command;
  }
}

// ---- the table's rules, on a table of the test's own ---------------------------------

void finishToy(SummaryOptions& options, std::vector<std::string> operands) {
  options.paths = std::move(operands);
}

const detail::CommandSpec<SummaryOptions>& toySpec() {
  static const detail::CommandSpec<SummaryOptions> spec{
      "toy",
      Command::Kind::Summary,
      &Command::summary,
      {
          {"--top", "-t", "N", "how many",
           [](SummaryOptions& o, const char*, const std::string& v) { o.topKernels = v.size(); }},
          {"--on", nullptr, nullptr, "switch it on, or off",
           [](SummaryOptions& o, const char*, const std::string&) { o.topKernels = 1; }},
          {"--off", nullptr, nullptr, nullptr,
           [](SummaryOptions& o, const char*, const std::string&) { o.topKernels = 0; }},
          {"--a-very-long-option-name", nullptr, "VALUE", "its text on a line of its own",
           [](SummaryOptions&, const char*, const std::string&) {}},
      },
      detail::Operands::Anywhere,
      finishToy,
      "usage: toy\n",
      "notes\n"};
  return spec;
}

TEST(OptionTableTest, HelpIsMadeFromTheTable) {
  EXPECT_EQ(detail::helpWith(toySpec()),
            "usage: toy\n"
            "\noptions:\n"
            "  -t, --top N      how many\n"
            "      --on, --off  switch it on, or off\n"
            "      --a-very-long-option-name VALUE\n"
            "                   its text on a line of its own\n"
            "  -h, --help       this text\n"
            "\nnotes\n");
}

TEST(OptionTableTest, LongTextIsWrappedUnderItsColumn) {
  const std::string text(40, 'a');
  EXPECT_EQ(detail::wrapped(text + " " + text + " " + text, 10, 10),
            text + " " + text + "\n" + std::string(10, ' ') + text + "\n");
}

TEST(OptionTableTest, ParsingFollowsTheTable) {
  Command c = detail::parseWith(toySpec(), {"toy", "a", "-t", "xyz", "b", "--", "--on"});
  EXPECT_EQ(c.kind, Command::Kind::Summary);
  EXPECT_EQ(c.summary.topKernels, 3u);
  EXPECT_EQ(c.summary.paths, (std::vector<std::string>{"a", "b", "--on"}));
  EXPECT_EQ(detail::parseWith(toySpec(), {"toy", "--on", "--off"}).summary.topKernels, 0u);
  c = detail::parseWith(toySpec(), {"toy", "-t", "1", "-h", "--bogus"});
  EXPECT_EQ(c.kind, Command::Kind::Help);
  EXPECT_EQ(c.helpTopic, "toy");
  EXPECT_THROW(detail::parseWith(toySpec(), {"toy", "-t"}), UsageError);
}

}  // namespace
}  // namespace kinetrace::cli
