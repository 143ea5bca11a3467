#include "session/settings.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

TEST(SettingsTest, EveryKeyIsOneLowerCaseRowWithItsVariable) {
  std::set<std::string> keys;
  std::set<std::string> options;
  for (const Setting& row : settings()) {
    EXPECT_TRUE(keys.insert(row.key).second) << "two rows for " << row.key;
    for (const char* c = row.key; *c != '\0'; ++c) {
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(*c)) || *c == '_') << row.key;
    }
    EXPECT_EQ(
        environmentVariableOf(row), "KINETRACE_" + [&] {
          std::string upper = row.key;
          for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          return upper;
        }());
    EXPECT_NE(row.read, nullptr) << row.key;
    EXPECT_GT(std::string(row.help).size(), 20u) << row.key;
    if (row.runOption != nullptr) {
      EXPECT_EQ(std::string(row.runOption).rfind("--", 0), 0u) << row.key;
      EXPECT_TRUE(options.insert(row.runOption).second) << "two rows for " << row.runOption;
    }
  }
}

TEST(SettingsTest, KeysAreFoundInAnyCaseAndUnknownOnesAreNot) {
  ASSERT_NE(findSetting("memory_mb"), nullptr);
  EXPECT_EQ(findSetting(" MEMORY_MB "), findSetting("memory_mb"));
  EXPECT_EQ(findSetting("memory"), nullptr);
  EXPECT_EQ(findSetting(""), nullptr);
}

// Config::set, the environment and `kinetrace run` read a value through the same row, so a
// value one accepts the others accept, and one refusal reads the same everywhere but for who
// asked.
TEST(SettingsTest, ConfigSetReadsThroughTheRowAndSaysWhoRefused) {
  Config config;
  config.set("Memory_MB", " 64 ");
  EXPECT_EQ(config.memoryMb, 64u);
  try {
    config.set("memory_mb", "0");
    FAIL() << "0 MB accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Setting);
    EXPECT_STREQ(error.what(),
                 "config: memory_mb must be a whole number from 1 to 1048576, got \"0\"");
  }
  try {
    findSetting("memory_mb")->read(config, "0");
    FAIL() << "0 MB accepted";
  } catch (const SettingRefused& refused) {
    EXPECT_STREQ(refused.what(), "memory_mb must be a whole number from 1 to 1048576, got \"0\"");
  }
  try {
    config.set("memroy_mb", "64");
    FAIL() << "a typo accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Setting);
    EXPECT_NE(std::string(error.what()).find("unknown key \"memroy_mb\" (known: " + settingKeys()),
              std::string::npos)
        << error.what();
  }
}

// When a process answers dynolog: once it uses a GPU by default (a launcher takes no slot),
// or from its start for a CPU-only workload.
TEST(SettingsTest, DynologAnswerIsGpuOrStart) {
  Config config;
  EXPECT_FALSE(config.dynologAnswersAtStart);
  config.set("dynolog_answer", "start");
  EXPECT_TRUE(config.dynologAnswersAtStart);
  config.set("dynolog_answer", "GPU");
  EXPECT_FALSE(config.dynologAnswersAtStart);
  try {
    config.set("dynolog_answer", "later");
    FAIL() << "an unknown value accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("gpu or start"), std::string::npos) << error.what();
  }
}

// docs/CONFIGURATION.md holds the table `kinetrace help settings` prints: a row added,
// renamed or re-worded without the docs following fails here.
TEST(SettingsTest, TheDocumentationsTableIsTheSettingsTable) {
  std::ifstream file(std::string(KINETRACE_SOURCE_DIR) + "/docs/CONFIGURATION.md");
  ASSERT_TRUE(file.good()) << "docs/CONFIGURATION.md not found";
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- settings table -->\n";
  const std::string end = "<!-- end of settings table -->";
  const std::size_t from = doc.find(begin);
  const std::size_t to = doc.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), settingsMarkdown())
      << "docs/CONFIGURATION.md is behind the settings table: put `kinetrace help settings` "
         "between its markers";
}

}  // namespace
}  // namespace kinetrace::detail
