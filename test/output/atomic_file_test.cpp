#include "output/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kinetrace_atomic_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
    return names;
  }
  static std::string contents(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string errorOf(const std::string& path) {
    try {
      AtomicFile file(path);
      file.write("x", 1);
      file.commit();
    } catch (const Error& error) {
      return error.what();
    }
    return "no error";
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, CommitMakesTheFileAppearWithEveryByte) {
  const fs::path path = dir_ / "trace.json";
  std::string expected;
  {
    AtomicFile file(path.string());
    for (int i = 0; i < 1000; ++i) {
      const std::string chunk = "chunk " + std::to_string(i) + "\n";
      file.write(chunk.data(), chunk.size());
      expected += chunk;
    }
    file.commit();
  }
  EXPECT_EQ(contents(path), expected);
  EXPECT_EQ(entries(), std::vector<std::string>{"trace.json"});
}

TEST_F(AtomicFileTest, WritesToATemporaryFileBesideThePathUntilCommit) {
  const fs::path path = dir_ / "trace.json";
  AtomicFile file(path.string());
  file.write("{}", 2);
  EXPECT_FALSE(fs::exists(path));
  const std::string prefix = "trace.json.tmp." + std::to_string(::getpid()) + ".";
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].rfind(prefix, 0), 0u) << entries()[0];
  EXPECT_EQ(fs::path(file.tempPath()).parent_path(), dir_);
  file.commit();
  EXPECT_TRUE(fs::exists(path));
}

TEST_F(AtomicFileTest, LeavesNothingWhenDestroyedWithoutCommit) {
  {
    AtomicFile file((dir_ / "trace.json").string());
    file.write("partial", 7);
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, LeavesAnEarlierFileUntouchedUntilCommitThenReplacesIt) {
  const fs::path path = dir_ / "trace.json";
  std::ofstream(path) << "old";
  {
    AtomicFile abandoned(path.string());
    abandoned.write("new", 3);
  }
  EXPECT_EQ(contents(path), "old");
  AtomicFile file(path.string());
  file.write("new", 3);
  file.commit();
  EXPECT_EQ(contents(path), "new");
}

TEST_F(AtomicFileTest, MissingDirectoryErrorNamesThePathAndTheReason) {
  const std::string path = (dir_ / "missing" / "x.json").string();
  EXPECT_EQ(errorOf(path),
            "kinetrace: cannot write trace to " + path + ": No such file or directory");
}

TEST_F(AtomicFileTest, PathThatIsADirectoryIsRefusedBeforeWriting) {
  fs::create_directory(dir_ / "sub");
  const std::string path = (dir_ / "sub").string();
  EXPECT_EQ(errorOf(path), "kinetrace: cannot write trace to " + path + ": Is a directory");
  EXPECT_EQ(entries(), std::vector<std::string>{"sub"});
}

TEST_F(AtomicFileTest, UnwritableDirectoryErrorNamesThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string path = (dir_ / "x.json").string();
  EXPECT_EQ(errorOf(path), "kinetrace: cannot write trace to " + path + ": Permission denied");
}

TEST_F(AtomicFileTest, EmptyPathIsRefused) { EXPECT_THROW(AtomicFile(""), Error); }

// A full disk, simulated with a file size limit: write() then fails with EFBIG instead of
// killing the process with SIGXFSZ.
TEST_F(AtomicFileTest, WriteFailureNamesThePathAndLeavesNoFile) {
  const std::string path = (dir_ / "x.json").string();
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  {
    AtomicFile file(path);
    const std::string block(64 * 1024, 'x');
    try {
      file.write(block.data(), block.size());
    } catch (const Error& error) {
      message = error.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previousHandler);
  EXPECT_EQ(message, "kinetrace: cannot write trace to " + path + ": File too large");
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, CommitTwiceIsHarmless) {
  const fs::path path = dir_ / "trace.json";
  AtomicFile file(path.string());
  file.write("ok", 2);
  file.commit();
  file.commit();
  EXPECT_EQ(contents(path), "ok");
}

}  // namespace
}  // namespace kinetrace::detail
