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
#include <memory>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "support/temp_dir.h"
#include "support/test_support.h"

namespace kinetrace::detail {
namespace {

namespace fs = std::filesystem;
using kinetrace::testing::deadPid;
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
  EXPECT_EQ(errorOf(missing), "cannot write trace to " + missing + ": " + path("missing") +
                                  ": No such file or directory")
      << "the part of the path that is missing is named";
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

// A trace written while recording may take hours: its directory is held from the start, so
// a directory renamed and replaced by a link meanwhile cannot redirect the file.
TEST_F(AtomicFileTest, TheFileLandsInTheDirectoryCheckedWhateverIsRelinkedBeforeCommit) {
  fs::create_directory(path("checked"));
  fs::create_directory(path("elsewhere"));
  AtomicFile file(path("checked/trace.json"));
  file.write("x", 1);
  fs::rename(path("checked"), path("moved"));
  fs::create_symlink(path("elsewhere"), path("checked"));
  file.commit();
  EXPECT_EQ(fileContents(path("moved/trace.json")), "x");
  EXPECT_TRUE(fs::is_empty(path("elsewhere")));
}

TEST_F(AtomicFileTest, ALinkPlantedAtTheNameBeforeCommitIsReplacedNotWrittenThrough) {
  writeFile(path("victim"), "precious");
  AtomicFile file(path("trace.json"));
  file.write("x", 1);
  fs::create_symlink(path("victim"), path("trace.json"));
  file.commit();
  EXPECT_EQ(fileContents(path("victim")), "precious");
  EXPECT_FALSE(fs::is_symlink(path("trace.json")));
  EXPECT_EQ(fileContents(path("trace.json")), "x");
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

// Salvaging a leftover (`kinetrace convert X.json.tmp.<pid>.<hex> X.json`) used to remove
// it before it was read: the cleanup of stale temporary files took the input for one.
TEST_F(AtomicFileTest, LeavesTemporaryFilesItDidNotCreate) {
  const std::string dead = std::to_string(deadPid());
  const std::vector<std::string> leftovers = {"trace.json.tmp." + dead + ".0badf00d",
                                              "trace.json.tmp." + dead + ".1"};
  for (const std::string& name : leftovers) writeFile(dir_ / name, "salvage me");
  save(path("trace.json"), "new");
  std::vector<std::string> expected = leftovers;
  expected.push_back("trace.json");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(), expected);
  for (const std::string& name : leftovers) EXPECT_EQ(fileContents(dir_ / name), "salvage me");
  EXPECT_EQ(fileContents(path("trace.json")), "new");
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

// ---- mode and owner of a file replaced --------------------------------------------------

mode_t permissionsOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST_F(AtomicFileTest, AReplacedFileKeepsItsMode) {
  for (const mode_t mode : {mode_t{0600}, mode_t{0640}, mode_t{0444}, mode_t{0666}}) {
    writeFile(path("trace.json"), "old");
    ASSERT_EQ(::chmod(path("trace.json").c_str(), mode), 0);
    AtomicFile file(path("trace.json"));
    EXPECT_EQ(permissionsOf(file.tempPath()), mode) << "private from the first byte";
    file.write("new", 3);
    file.commit();
    EXPECT_EQ(permissionsOf(path("trace.json")), mode) << std::oct << mode;
    EXPECT_EQ(fileContents(path("trace.json")), "new");
    ASSERT_EQ(::unlink(path("trace.json").c_str()), 0);
  }
}

TEST_F(AtomicFileTest, AFileReplacedThroughALinkKeepsItsMode) {
  writeFile(path("real.json"), "old");
  ASSERT_EQ(::chmod(path("real.json").c_str(), 0600), 0);
  fs::create_symlink("real.json", path("link.json"));
  save(path("link.json"), "new");
  EXPECT_EQ(permissionsOf(path("real.json")), mode_t{0600});
}

TEST_F(AtomicFileTest, SetUserIdAndStickyBitsOfAReplacedFileAreNotKept) {
  writeFile(path("trace.json"), "old");
  ASSERT_EQ(::chmod(path("trace.json").c_str(), 06755), 0);
  save(path("trace.json"), "new");
  EXPECT_EQ(permissionsOf(path("trace.json")), mode_t{0755});
}

TEST_F(AtomicFileTest, ANewFileGetsTheModeTheUmaskLeaves) {
  const mode_t umask = ::umask(027);
  save(path("trace.json"), "new");
  ::umask(umask);
  EXPECT_EQ(permissionsOf(path("trace.json")), mode_t{0640});
}

constexpr uid_t kNobody = 65534;

TEST_F(AtomicFileTest, AsRootAReplacedFileKeepsItsOwnerAndGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give a file to another user";
  writeFile(path("trace.json"), "old");
  ASSERT_EQ(::chown(path("trace.json").c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::chmod(path("trace.json").c_str(), 0600), 0);
  save(path("trace.json"), "new");
  struct stat info {};
  ASSERT_EQ(::stat(path("trace.json").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, kNobody);
  EXPECT_EQ(info.st_gid, kNobody);
  EXPECT_EQ(info.st_mode & 07777, mode_t{0600});
}

// ---- links of other users in shared directories ------------------------------------------

// A directory like /tmp: sticky and writable by all, owned by root.
class SharedDirectoryTest : public AtomicFileTest {
 protected:
  void SetUp() override {
    AtomicFileTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to make a link owned by another user";
    fs::create_directory(path("shared"));
    ASSERT_EQ(::chmod(path("shared").c_str(), 01777), 0);
    writeFile(path("victim"), "precious");
  }
  // A link in the shared directory to the victim, owned by `owner`.
  std::string linkOwnedBy(uid_t owner) {
    const std::string link = path("shared/x.json");
    fs::create_symlink(path("victim"), link);
    EXPECT_EQ(::lchown(link.c_str(), owner, owner), 0);
    return link;
  }
};

// As root, `convert in.json /tmp/x.json` replaced /etc/... through another user's link.
TEST_F(SharedDirectoryTest, AnotherUsersLinkIsNotFollowed) {
  const std::string link = linkOwnedBy(kNobody);
  EXPECT_EQ(errorOf(link), "cannot write trace to " + link + ": not following " + link +
                               ": it is a symbolic link of another user (uid 65534) in the "
                               "shared directory " +
                               path("shared") +
                               " (sticky and writable by all), so it may point anywhere; "
                               "remove it or write elsewhere");
  EXPECT_EQ(fileContents(path("victim")), "precious");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(entries(), (std::vector<std::string>{"shared", "victim"}));
}

TEST_F(SharedDirectoryTest, AnotherUsersLinkFurtherDownAChainIsNotFollowed) {
  const std::string link = linkOwnedBy(kNobody);
  fs::create_symlink(link, path("mine.json"));
  EXPECT_NE(errorOf(path("mine.json")).find(": not following " + link + ": it is a symbolic link"),
            std::string::npos);
  EXPECT_EQ(fileContents(path("victim")), "precious");
}

// As root, `convert in.json /tmp/s/d/file` replaced a file wherever another user's directory
// link d pointed: the rule holds at every depth of the path, not only at its end.
TEST_F(SharedDirectoryTest, AnotherUsersDirectoryLinkInTheMiddleOfThePathIsNotFollowed) {
  fs::create_directory(path("victim_dir"));
  writeFile(path("victim_dir/file"), "precious");
  const std::string link = path("shared/d");
  fs::create_symlink(path("victim_dir"), link);
  ASSERT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(errorOf(link + "/file"),
            "cannot write trace to " + link + "/file: not following " + link +
                ": it is a symbolic link of another user (uid 65534) in the shared directory " +
                path("shared") +
                " (sticky and writable by all), so it may point anywhere; remove it or write "
                "elsewhere");
  EXPECT_EQ(fileContents(path("victim_dir/file")), "precious");
  EXPECT_EQ(dir_.entries(), (std::vector<std::string>{"shared", "victim", "victim_dir"}));
}

TEST_F(SharedDirectoryTest, TheCallersOwnLinkIsFollowed) {
  const std::string link = linkOwnedBy(::geteuid());
  EXPECT_EQ(errorOf(link), "no error");
  EXPECT_EQ(fileContents(path("victim")), "x");
}

TEST_F(SharedDirectoryTest, ALinkOfTheDirectorysOwnerIsFollowed) {
  ASSERT_EQ(::chown(path("shared").c_str(), kNobody, kNobody), 0);
  const std::string link = linkOwnedBy(kNobody);
  EXPECT_EQ(errorOf(link), "no error");
  EXPECT_EQ(fileContents(path("victim")), "x");
}

TEST_F(SharedDirectoryTest, AnotherUsersLinkInADirectoryNotWritableByAllIsFollowed) {
  ASSERT_EQ(::chmod(path("shared").c_str(), 01755), 0);
  const std::string link = linkOwnedBy(kNobody);
  EXPECT_EQ(errorOf(link), "no error");
  EXPECT_EQ(fileContents(path("victim")), "x");
}

// ---- signals -------------------------------------------------------------------------------

// Runs `body` in a child process that then waits (on a pipe no one writes) until killed;
// returns once the child has run `body`. The child's pid.
template <typename Body>
pid_t childThatWaits(Body body) {
  int ready[2];
  int never[2];
  EXPECT_EQ(::pipe(ready), 0);
  EXPECT_EQ(::pipe(never), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    // never[1] stays open here: with a writer left, the read below waits for good.
    body();
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    char ignored;
    while (::read(never[0], &ignored, 1) != 0) {
    }
    ::_exit(4);  // not reached: the parent kills this process first
  }
  ::close(ready[1]);
  ::close(never[0]);
  char byte = 0;
  EXPECT_EQ(::read(ready[0], &byte, 1), 1) << "the child ran its part";
  ::close(ready[0]);
  ::close(never[1]);  // the child's copy keeps its read waiting
  return child;
}

// The signal that ended the child, or -1 when it exited.
int signalThatEnded(pid_t child) {
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

class AtomicFileSignalTest : public AtomicFileTest, public ::testing::WithParamInterface<int> {};

TEST_P(AtomicFileSignalTest, RemovesTheTemporaryFilesBeingWrittenThenEndsBySignal) {
  writeFile(path("b.json"), "old b");
  const pid_t child = childThatWaits([this] {
    removeTemporaryFilesOnSignals();
    auto* a = new AtomicFile(path("a.json"));
    a->write("partial", 7);
    auto* b = new AtomicFile(path("b.json"));
    b->write("partial", 7);
    AtomicFile done(path("c.json"));
    done.write("whole", 5);
    done.commit();
  });
  EXPECT_EQ(entries().size(), 4u) << "a's and b's temporary files, b.json and c.json";
  ASSERT_EQ(::kill(child, GetParam()), 0);
  EXPECT_EQ(signalThatEnded(child), GetParam());
  EXPECT_EQ(entries(), (std::vector<std::string>{"b.json", "c.json"}));
  EXPECT_EQ(fileContents(path("b.json")), "old b");
  EXPECT_EQ(fileContents(path("c.json")), "whole");
}

INSTANTIATE_TEST_SUITE_P(InterruptHangupTerminate, AtomicFileSignalTest,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP));

TEST_F(AtomicFileTest, AnIgnoredSignalStaysIgnored) {
  const pid_t child = childThatWaits([this] {
    ::signal(SIGHUP, SIG_IGN);  // as under nohup
    removeTemporaryFilesOnSignals();
    auto* file = new AtomicFile(path("a.json"));
    file->write("partial", 7);
  });
  ASSERT_EQ(::kill(child, SIGHUP), 0);
  // Had SIGHUP not been ignored it would have ended the child: sent first, and when both
  // are pending the lower-numbered signal is delivered first.
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  EXPECT_EQ(signalThatEnded(child), SIGTERM);
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, WithoutTheHandlersASignalLeavesTheTemporaryFile) {
  const pid_t child = childThatWaits([this] {
    auto* file = new AtomicFile(path("a.json"));
    file->write("partial", 7);
  });
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  EXPECT_EQ(signalThatEnded(child), SIGTERM);
  EXPECT_EQ(entries().size(), 1u) << "the library alone installs no handler";
}

TEST_F(AtomicFileTest, MoreFilesAtOnceThanTheSignalTableHoldsAreStillWritten) {
  std::vector<std::unique_ptr<AtomicFile>> files;
  for (int i = 0; i < 200; ++i) {
    files.push_back(std::make_unique<AtomicFile>(path(std::to_string(i) + ".json")));
  }
  for (auto& file : files) {
    file->write("x", 1);
    file->commit();
  }
  files.clear();
  EXPECT_EQ(entries().size(), 200u);
  EXPECT_EQ(fileContents(path("199.json")), "x");
}

}  // namespace
}  // namespace kinetrace::detail
