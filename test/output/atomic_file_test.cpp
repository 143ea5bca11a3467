#include "output/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "support/temp_dir.h"
#include "support/test_support.h"

namespace kinetrace::detail {
namespace {

namespace fs = std::filesystem;
using kinetrace::testing::fileContents;
using kinetrace::testing::writeFile;

// Writes "x" to the path and commits; the error message, or "no error".
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

// The error of creating the AtomicFile alone, or "no error": a refusal comes before any byte
// is written.
std::string openErrorOf(const std::string& path) {
  return kinetrace::testing::errorOf([&path] { AtomicFile file(path); });
}

void save(const fs::path& path, const std::string& text) {
  AtomicFile file(path.string());
  file.write(text.data(), text.size());
  file.commit();
}

// The pid of a process that has exited and been reaped: kill(pid, 0) fails with ESRCH.
pid_t deadPid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  mode_t mode = 0;
  dev_t rdev = 0;
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && mode == o.mode && rdev == o.rdev;
  }
};
FileIdentity identityOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return FileIdentity{info.st_dev, info.st_ino, info.st_mode, info.st_rdev};
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  std::vector<std::string> entries() const { return dir_.entries(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  kinetrace::testing::TempDir dir_{"kinetrace_atomic"};
};

// ---- writing and committing ----------------------------------------------------------

TEST_F(AtomicFileTest, CommitMakesTheFileAppearWithEveryByte) {
  std::string expected;
  {
    AtomicFile file(path("trace.json"));
    for (int i = 0; i < 1000; ++i) {
      const std::string chunk = "chunk " + std::to_string(i) + "\n";
      file.write(chunk.data(), chunk.size());
      expected += chunk;
    }
    file.commit();
  }
  EXPECT_EQ(fileContents(path("trace.json")), expected);
  EXPECT_EQ(entries(), std::vector<std::string>{"trace.json"});
}

TEST_F(AtomicFileTest, WritesToATemporaryFileBesideThePathUntilCommit) {
  AtomicFile file(path("trace.json"));
  file.write("{}", 2);
  EXPECT_FALSE(fs::exists(path("trace.json")));
  const std::string prefix = "trace.json.tmp." + std::to_string(::getpid()) + ".";
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].rfind(prefix, 0), 0u) << entries()[0];
  EXPECT_EQ(fs::path(file.tempPath()).parent_path(), dir_.path());
  EXPECT_EQ(file.target(), path("trace.json"));
  file.commit();
  EXPECT_TRUE(fs::exists(path("trace.json")));
}

TEST_F(AtomicFileTest, LeavesNothingWhenDestroyedWithoutCommit) {
  {
    AtomicFile file(path("trace.json"));
    file.write("partial", 7);
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, LeavesAnEarlierFileUntouchedUntilCommitThenReplacesIt) {
  writeFile(path("trace.json"), "old");
  {
    AtomicFile abandoned(path("trace.json"));
    abandoned.write("new", 3);
  }
  EXPECT_EQ(fileContents(path("trace.json")), "old");
  save(path("trace.json"), "new");
  EXPECT_EQ(fileContents(path("trace.json")), "new");
}

TEST_F(AtomicFileTest, CommitTwiceIsHarmless) {
  AtomicFile file(path("trace.json"));
  file.write("ok", 2);
  file.commit();
  file.commit();
  EXPECT_EQ(fileContents(path("trace.json")), "ok");
}

TEST_F(AtomicFileTest, WriteAfterCommitIsRefused) {
  AtomicFile file(path("trace.json"));
  file.commit();
  EXPECT_EQ(kinetrace::testing::errorOf([&file] { file.write("x", 1); }),
            "cannot write trace to " + path("trace.json") + ": already closed");
}

// ---- errors ----------------------------------------------------------------------------

TEST_F(AtomicFileTest, MissingDirectoryErrorNamesThePathAndTheReason) {
  const std::string missing = path("missing/x.json");
  EXPECT_EQ(errorOf(missing), "cannot write trace to " + missing + ": No such file or directory");
}

TEST_F(AtomicFileTest, UnwritableDirectoryErrorNamesThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  fs::permissions(dir_.path(), fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_EQ(errorOf(path("x.json")),
            "cannot write trace to " + path("x.json") + ": Permission denied");
}

TEST_F(AtomicFileTest, EmptyPathIsRefused) {
  EXPECT_EQ(kinetrace::testing::errorOf([] { AtomicFile file(""); }),
            "cannot write trace: the path is empty");
}

// A full disk, simulated with a file size limit: write() then fails with EFBIG instead of
// killing the process with SIGXFSZ.
TEST_F(AtomicFileTest, WriteFailureNamesThePathAndLeavesNoFile) {
  const std::string target = path("x.json");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  {
    AtomicFile file(target);
    const std::string block(64 * 1024, 'x');
    try {
      file.write(block.data(), block.size());
    } catch (const Error& error) {
      message = error.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previousHandler);
  EXPECT_EQ(message, "cannot write trace to " + target + ": File too large");
  EXPECT_TRUE(entries().empty());
}

// ---- what is at the path is never damaged ------------------------------------------------

TEST_F(AtomicFileTest, DirectoryIsRefusedBeforeWriting) {
  fs::create_directory(path("sub"));
  EXPECT_EQ(openErrorOf(path("sub")),
            "cannot write trace to " + path("sub") + ": it is a directory, not a regular file");
  EXPECT_EQ(entries(), std::vector<std::string>{"sub"});
  EXPECT_TRUE(fs::is_empty(path("sub")));
}

TEST_F(AtomicFileTest, FifoIsRefusedAndLeftInPlace) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  const FileIdentity before = identityOf(path("pipe"));
  EXPECT_EQ(openErrorOf(path("pipe")),
            "cannot write trace to " + path("pipe") + ": it is a FIFO, not a regular file");
  EXPECT_TRUE(before == identityOf(path("pipe")));
  EXPECT_TRUE(S_ISFIFO(identityOf(path("pipe")).mode));
  EXPECT_EQ(entries(), std::vector<std::string>{"pipe"}) << "no temporary file was made";
}

TEST_F(AtomicFileTest, SocketIsRefusedAndLeftInPlace) {
  const std::string socketPath = path("sock");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socketPath.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, socketPath.c_str(), socketPath.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(openErrorOf(socketPath),
            "cannot write trace to " + socketPath + ": it is a socket, not a regular file");
  EXPECT_TRUE(S_ISSOCK(identityOf(socketPath).mode));
  ::close(fd);
}

// As root, the rename used to replace /dev/null with a regular file. If the refusal breaks,
// the AtomicFile below is destroyed without commit(), so /dev/null is still not replaced.
TEST_F(AtomicFileTest, DevNullIsRefusedAndUntouched) {
  struct stat info {};
  if (::lstat("/dev/null", &info) != 0 || !S_ISCHR(info.st_mode)) {
    GTEST_SKIP() << "no /dev/null character device here";
  }
  const FileIdentity before = identityOf("/dev/null");
  EXPECT_EQ(openErrorOf("/dev/null"),
            "cannot write trace to /dev/null: it is a character device, not a regular file");
  const FileIdentity after = identityOf("/dev/null");
  EXPECT_TRUE(before == after);
  EXPECT_TRUE(S_ISCHR(after.mode));
  EXPECT_EQ(after.rdev, before.rdev);
}

TEST_F(AtomicFileTest, LinkToADeviceIsRefusedNamingBoth) {
  fs::create_symlink("/dev/null", path("link"));
  EXPECT_EQ(openErrorOf(path("link")), "cannot write trace to " + path("link") +
                                           ": it links to /dev/null, a character device, not a "
                                           "regular file");
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_TRUE(S_ISCHR(identityOf("/dev/null").mode));
}

TEST_F(AtomicFileTest, TargetThatStopsBeingARegularFileBeforeCommitIsNotReplaced) {
  AtomicFile file(path("trace.json"));
  file.write("x", 1);
  ASSERT_EQ(::mkfifo(path("trace.json").c_str(), 0600), 0);  // appeared while writing
  EXPECT_EQ(kinetrace::testing::errorOf([&file] { file.commit(); }),
            "cannot write trace to " + path("trace.json") + ": it is a FIFO, not a regular file");
  EXPECT_TRUE(S_ISFIFO(identityOf(path("trace.json")).mode));
}

// ---- symbolic links ----------------------------------------------------------------------

TEST_F(AtomicFileTest, LinkIsFollowedAndStaysALink) {
  writeFile(path("real.json"), "old");
  fs::create_symlink("real.json", path("link.json"));
  save(path("link.json"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(fs::read_symlink(path("link.json")), "real.json");
  EXPECT_EQ(fileContents(path("real.json")), "new");
  EXPECT_EQ(entries(), (std::vector<std::string>{"link.json", "real.json"}));
}

TEST_F(AtomicFileTest, RelativeLinkIsResolvedFromItsOwnDirectoryAndTheTempGoesBesideTheTarget) {
  fs::create_directory(path("sub"));
  writeFile(path("sub/real.json"), "old");
  fs::create_symlink("sub/real.json", path("link.json"));
  AtomicFile file(path("link.json"));
  EXPECT_EQ(fs::path(file.tempPath()).parent_path(), dir_ / "sub") << "same file system";
  EXPECT_EQ(fs::path(file.target()), dir_ / "sub/real.json");
  EXPECT_EQ(file.path(), path("link.json"));
  file.write("new", 3);
  file.commit();
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(fileContents(path("sub/real.json")), "new");
  EXPECT_EQ(dir_.entries(), (std::vector<std::string>{"link.json", "sub"}));
}

TEST_F(AtomicFileTest, ChainOfLinksIsFollowedToTheEnd) {
  fs::create_directory(path("sub"));
  writeFile(path("sub/end.json"), "old");
  fs::create_symlink(dir_ / "sub/end.json", path("sub/middle.json"));  // absolute
  fs::create_symlink("sub/middle.json", path("first.json"));           // relative
  save(path("first.json"), "new");
  EXPECT_TRUE(fs::is_symlink(path("first.json")));
  EXPECT_TRUE(fs::is_symlink(path("sub/middle.json")));
  EXPECT_EQ(fileContents(path("sub/end.json")), "new");
}

TEST_F(AtomicFileTest, DanglingLinkGetsItsTargetCreated) {
  fs::create_directory(path("out"));
  fs::create_symlink("out/trace.json", path("latest.json"));
  save(path("latest.json"), "trace");
  EXPECT_TRUE(fs::is_symlink(path("latest.json")));
  EXPECT_TRUE(fs::is_regular_file(path("out/trace.json")));
  EXPECT_EQ(fileContents(path("latest.json")), "trace");
}

TEST_F(AtomicFileTest, LinkLoopIsRefused) {
  fs::create_symlink("b", path("a"));
  fs::create_symlink("a", path("b"));
  EXPECT_EQ(errorOf(path("a")),
            "cannot write trace to " + path("a") + ": Too many levels of symbolic links");
  EXPECT_TRUE(fs::is_symlink(path("a")));
  EXPECT_TRUE(fs::is_symlink(path("b")));
}

// ---- temporary files left by killed saves --------------------------------------------------

TEST_F(AtomicFileTest, RemovesTemporaryFilesOfADeadProcessOnly) {
  const std::string dead = std::to_string(deadPid());
  ASSERT_EQ(::kill(std::stoi(dead), 0), -1);
  ASSERT_EQ(errno, ESRCH);
  const std::string mine = std::to_string(::getpid());
  const std::vector<std::string> stale = {"trace.json.tmp." + dead + ".0badf00d",
                                          "trace.json.tmp." + dead + ".1"};
  const std::vector<std::string> kept = {
      "trace.json",
      "trace.json.bak",
      "trace.json.tmp." + mine + ".12345678",   // a live process: this one
      "other.json.tmp." + dead + ".0badf00d",   // another file's
      "trace.json.tmp." + dead,                 // not the whole pattern
      "trace.json.tmp." + dead + ".notes",      // not hex
      "trace.json.tmp.x" + dead + ".00",        // not a pid
      "trace.json.tmp." + dead + ".",           // no tag
      "xtrace.json.tmp." + dead + ".0badf00d",  // another base name
  };
  for (const std::string& name : stale) writeFile(dir_ / name, "stale");
  for (const std::string& name : kept) writeFile(dir_ / name, "keep");
  // Not regular files: never removed, whatever their name.
  const std::string directory = "trace.json.tmp." + dead + ".00000000";
  const std::string link = "trace.json.tmp." + dead + ".0000abcd";
  const std::string fifo = "trace.json.tmp." + dead + ".0000beef";
  fs::create_directory(dir_ / directory);
  fs::create_symlink("trace.json.bak", dir_ / link);
  ASSERT_EQ(::mkfifo((dir_ / fifo).c_str(), 0600), 0);

  AtomicFile file(path("trace.json"));
  std::vector<std::string> expected = kept;
  expected.insert(expected.end(),
                  {directory, link, fifo, fs::path(file.tempPath()).filename().string()});
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(), expected);
  for (const std::string& name : kept) EXPECT_EQ(fileContents(dir_ / name), "keep") << name;
}

// A save in another pid namespace (a container sharing the directory) has a pid this
// process cannot see; the lock it holds while writing keeps its file.
TEST_F(AtomicFileTest, KeepsATemporaryFileSomeoneHoldsLocked) {
  const std::string name = "trace.json.tmp." + std::to_string(deadPid()) + ".0badf00d";
  writeFile(dir_ / name, "being written");
  const int fd = ::open((dir_ / name).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  {
    AtomicFile file(path("trace.json"));
    EXPECT_TRUE(fs::exists(dir_ / name));
  }
  ::close(fd);
  AtomicFile file(path("trace.json"));
  EXPECT_FALSE(fs::exists(dir_ / name)) << "removed once unlocked";
}

TEST_F(AtomicFileTest, ASaveInProgressKeepsItsTemporaryFileWhenAnotherStarts) {
  AtomicFile first(path("trace.json"));
  first.write("first", 5);
  AtomicFile second(path("trace.json"));
  EXPECT_TRUE(fs::exists(first.tempPath()));
  first.commit();
  EXPECT_EQ(fileContents(path("trace.json")), "first");
  second.write("second", 6);
  second.commit();
  EXPECT_EQ(fileContents(path("trace.json")), "second");
}

TEST_F(AtomicFileTest, RemovesStaleTemporaryFilesBesideALinksTarget) {
  fs::create_directory(path("sub"));
  fs::create_symlink("sub/real.json", path("link.json"));
  const std::string stale = "real.json.tmp." + std::to_string(deadPid()) + ".abcdef01";
  writeFile(dir_ / "sub" / stale, "stale");
  save(path("link.json"), "new");
  EXPECT_FALSE(fs::exists(dir_ / "sub" / stale));
  EXPECT_EQ(fileContents(path("sub/real.json")), "new");
}

}  // namespace
}  // namespace kinetrace::detail
