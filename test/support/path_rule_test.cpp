#include "support/path_rule.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace kinetrace::detail {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

class PathRuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    // The test directory's real path: where resolved paths say a file lands.
    real_ = fs::canonical(dir_.path()).string();
  }
  std::string path(const std::string& name) const { return real_ + "/" + name; }
  void makeDirectory(const std::string& name) { fs::create_directories(path(name)); }
  void link(const std::string& target, const std::string& name) {
    fs::create_symlink(target, path(name));
  }

  // Where `path` lands under `rule`, or "refused: why".
  static std::string landing(const std::string& path, const PathRule& rule = {}) {
    Result<OutputLocation> location = resolveOutput(path, rule);
    return location.ok() ? location.value().path() : "refused: " + location.why();
  }

  kinetrace::testing::TempDir dir_{"kinetrace_path_rule"};
  std::string real_;
};

TEST_F(PathRuleTest, ANewFileLandsInItsDirectoryUnderItsName) {
  Result<OutputLocation> location = resolveOutput(path("trace.json"), {});
  ASSERT_TRUE(location.ok()) << location.why();
  EXPECT_EQ(location.value().directory.path(), real_);
  EXPECT_EQ(location.value().name, "trace.json");
  EXPECT_FALSE(location.value().exists);
  EXPECT_FALSE(location.value().viaLinks);
}

TEST_F(PathRuleTest, LinksAreFollowedAtEveryDepthToWhereTheFileReallyLands) {
  makeDirectory("real/deeper");
  link("real", "to_real");               // a directory link, relative
  link(path("real/deeper"), "to_deep");  // absolute
  link("deeper/final.json", "real/file_link");
  EXPECT_EQ(landing(path("to_real/deeper/x.json")), path("real/deeper/x.json"));
  EXPECT_EQ(landing(path("to_deep/../deeper/x.json")), path("real/deeper/x.json"))
      << "'..' climbs from where the link led, not from the link's own directory";
  EXPECT_EQ(landing(path("to_real/file_link")), path("real/deeper/final.json"));
}

TEST_F(PathRuleTest, ARelativePathStartsFromTheCurrentDirectory) {
  makeDirectory("work/sub");
  const fs::path before = fs::current_path();
  fs::current_path(path("work"));
  const std::string landed = landing("sub/../trace.json");
  fs::current_path(before);
  EXPECT_EQ(landed, path("work/trace.json"));
}

TEST_F(PathRuleTest, WhatIsNotARegularFileIsRefusedNamingWhatItIs) {
  makeDirectory("dir");
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(landing(path("dir")), "refused: it is a directory, not a regular file");
  EXPECT_EQ(landing(path("fifo")), "refused: it is a FIFO, not a regular file");
  if (fs::is_character_file("/dev/null")) {
    EXPECT_EQ(landing("/dev/null"), "refused: it is a character device, not a regular file");
    link("/dev/null", "null_link");
    EXPECT_EQ(landing(path("null_link")),
              "refused: it links to /dev/null, a character device, not a regular file");
  }
}

TEST_F(PathRuleTest, APathThatNamesADirectoryIsNotAFile) {
  EXPECT_EQ(landing(path("sub/")), "refused: it names a directory, not a file");
  EXPECT_EQ(landing(path("sub/..")), "refused: it names a directory, not a file");
  EXPECT_EQ(landing("/"), "refused: it names a directory, not a file");
}

TEST_F(PathRuleTest, ANulByteAnywhereIsRefusedNotCutShort) {
  std::string withNul = path("a.json");
  withNul.insert(withNul.size() - 5, 1, '\0');
  EXPECT_EQ(landing(withNul), "refused: the path holds a NUL byte");
}

TEST_F(PathRuleTest, AMissingDirectoryIsNamedInTheRefusal) {
  EXPECT_EQ(landing(path("nope/x.json")),
            "refused: " + path("nope") + ": No such file or directory");
  std::ofstream(path("plain")) << "x";
  EXPECT_EQ(landing(path("plain/x.json")), "refused: " + path("plain") + ": not a directory");
}

TEST_F(PathRuleTest, ALinkLoopIsRefused) {
  link("b", "a");
  link("a", "b");
  EXPECT_EQ(landing(path("a")), "refused: Too many levels of symbolic links");
  EXPECT_EQ(landing(path("a/x.json")), "refused: Too many levels of symbolic links");
}

TEST_F(PathRuleTest, MissingDirectoriesAreMadeOnlyWhenAsked) {
  PathRule make;
  make.createDirectories = true;
  EXPECT_EQ(landing(path("a/b/c/x.json"), make), path("a/b/c/x.json"));
  EXPECT_TRUE(fs::is_directory(path("a/b/c")));
  EXPECT_FALSE(fs::exists(path("a/b/c/x.json"))) << "the file itself is the writer's to make";
  Result<OpenDirectory> dir = openDirectory(path("d/e"), make);
  ASSERT_TRUE(dir.ok()) << dir.why();
  EXPECT_EQ(dir.value().path(), path("d/e"));
}

// ---- allowed directories (what dynolog's unauthenticated requests are held to) --------------

class AllowedDirectoriesTest : public PathRuleTest {
 protected:
  void SetUp() override {
    PathRuleTest::SetUp();
    makeDirectory("allowed/sub");
    makeDirectory("elsewhere");
    rule_.allowedDirectories = {path("allowed")};
  }
  PathRule rule_;
};

TEST_F(AllowedDirectoriesTest, AFileInsideIsTaken) {
  EXPECT_EQ(landing(path("allowed/sub/x.json"), rule_), path("allowed/sub/x.json"));
  EXPECT_EQ(landing(path("allowed/x.json"), rule_), path("allowed/x.json"));
}

TEST_F(AllowedDirectoriesTest, ALinkInsideThatLeadsOutIsRefusedNamingWhereItLands) {
  link(path("elsewhere"), "allowed/out");
  EXPECT_EQ(landing(path("allowed/out/x.json"), rule_),
            "refused: it lands in " + path("elsewhere") + ", outside the directories allowed (" +
                path("allowed") + ")");
  link(path("elsewhere/victim"), "allowed/file_out");
  EXPECT_EQ(landing(path("allowed/file_out"), rule_)
                .rfind("refused: it lands in " + path("elsewhere"), 0),
            0u);
}

TEST_F(AllowedDirectoriesTest, ClimbingOutIsRefusedWhateverTheText) {
  EXPECT_EQ(
      landing(path("allowed/sub/../../elsewhere/x.json"), rule_).rfind("refused: it lands in", 0),
      0u);
}

TEST_F(AllowedDirectoriesTest, ALinkThatLeadsBackInIsTaken) {
  link(path("allowed/sub"), "elsewhere/in");
  link(path("elsewhere/in"), "allowed/round");
  EXPECT_EQ(landing(path("allowed/round/x.json"), rule_), path("allowed/sub/x.json"));
}

TEST_F(AllowedDirectoriesTest, AnAllowedDirectoryThatIsALinkIsResolvedToo) {
  link(path("allowed"), "alias");
  PathRule viaAlias;
  viaAlias.allowedDirectories = {path("alias")};
  EXPECT_EQ(landing(path("allowed/x.json"), viaAlias), path("allowed/x.json"));
  EXPECT_EQ(landing(path("elsewhere/x.json"), viaAlias).rfind("refused: it lands in", 0), 0u);
}

TEST_F(AllowedDirectoriesTest, NoDirectoryIsMadeOutsideTheAllowedOnes) {
  rule_.createDirectories = true;
  EXPECT_EQ(landing(path("elsewhere/new/x.json"), rule_),
            "refused: making " + path("elsewhere/new") + " would be in " + path("elsewhere") +
                ", outside the directories allowed (" + path("allowed") + ")");
  EXPECT_FALSE(fs::exists(path("elsewhere/new")));
  EXPECT_EQ(landing(path("allowed/new/x.json"), rule_), path("allowed/new/x.json"));
  EXPECT_TRUE(fs::is_directory(path("allowed/new")));
}

TEST_F(AllowedDirectoriesTest, WhenNoAllowedDirectoryExistsEverythingIsRefused) {
  PathRule missing;
  missing.allowedDirectories = {path("not_there")};
  EXPECT_EQ(landing(path("allowed/x.json"), missing),
            "refused: none of the directories allowed (" + path("not_there") + ") exists");
}

// ---- links of other users in shared directories, at any depth ------------------------------

class SharedDirectoryRuleTest : public PathRuleTest {
 protected:
  void SetUp() override {
    PathRuleTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to make a link owned by another user";
    makeDirectory("s");
    ASSERT_EQ(::chmod(path("s").c_str(), 01777), 0);  // like /tmp
    makeDirectory("victim_dir");
  }
  void linkOwnedBy(const std::string& target, const std::string& name, uid_t owner) {
    link(target, name);
    ASSERT_EQ(::lchown(path(name).c_str(), owner, owner), 0);
  }
};

// root's `convert in.json /tmp/s/d/file` replaced a file wherever d pointed.
TEST_F(SharedDirectoryRuleTest, AnotherUsersDirectoryLinkInTheMiddleOfThePathIsRefused) {
  linkOwnedBy(path("victim_dir"), "s/d", kNobody);
  EXPECT_EQ(landing(path("s/d/file")),
            "refused: not following " + path("s/d") +
                ": it is a symbolic link of another user (uid 65534) in the shared directory " +
                path("s") +
                " (sticky and writable by all), so it may point anywhere; remove it "
                "or write elsewhere");
}

TEST_F(SharedDirectoryRuleTest, AnotherUsersLinkReachedThroughOneOfOurOwnIsRefused) {
  linkOwnedBy(path("victim_dir"), "s/d", kNobody);
  link(path("s/d"), "mine");
  EXPECT_EQ(landing(path("mine/file")).rfind("refused: not following " + path("s/d"), 0), 0u);
}

TEST_F(SharedDirectoryRuleTest, OurOwnAndTheDirectoryOwnersLinksAreFollowed) {
  linkOwnedBy(path("victim_dir"), "s/ours", ::geteuid());
  EXPECT_EQ(landing(path("s/ours/file")), path("victim_dir/file"));
  ASSERT_EQ(::chown(path("s").c_str(), kNobody, kNobody), 0);
  linkOwnedBy(path("victim_dir"), "s/owners", kNobody);
  EXPECT_EQ(landing(path("s/owners/file")), path("victim_dir/file"));
}

// ---- probing and removing --------------------------------------------------------------------

TEST_F(PathRuleTest, AProbeLeavesNothingBehind) {
  Result<OutputLocation> location = resolveOutput(path("x.json"), {});
  ASSERT_TRUE(location.ok());
  EXPECT_TRUE(probeWritable(location.value().directory, location.value().name).ok());
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{});
}

TEST_F(PathRuleTest, AProbeSaysWhenNoFileCanBeMadeThere) {
  // /proc/self is a link the rule follows (root's, in a directory not writable by all); no
  // file can be made in the process's directory there.
  Result<OutputLocation> location = resolveOutput("/proc/self/trace.json", {});
  ASSERT_TRUE(location.ok()) << location.why();
  const Status probe = probeWritable(location.value().directory, location.value().name);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.why().rfind("/proc/" + std::to_string(::getpid()) + ": ", 0), 0u) << probe.why();
}

TEST_F(PathRuleTest, RemovingTakesTheFileNotTheLinkToIt) {
  makeDirectory("real");
  std::ofstream(path("real/t.json")) << "x";
  link("real/t.json", "t_link.json");
  EXPECT_TRUE(removeOutput(path("t_link.json"), {}).ok());
  EXPECT_FALSE(fs::exists(path("real/t.json")));
  EXPECT_TRUE(fs::is_symlink(path("t_link.json")));
  EXPECT_TRUE(removeOutput(path("gone.json"), {}).ok()) << "nothing there is not an error";
}

TEST_F(PathRuleTest, TheDirectoryHeldIsTheOneCheckedWhateverIsRenamedAfter) {
  makeDirectory("checked");
  makeDirectory("elsewhere");
  Result<OutputLocation> location = resolveOutput(path("checked/x.json"), {});
  ASSERT_TRUE(location.ok());
  // The checked directory moves away and a link to elsewhere takes its name.
  fs::rename(path("checked"), path("moved"));
  link(path("elsewhere"), "checked");
  const int fd = ::openat(location.value().directory.fd(), location.value().name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_TRUE(fs::exists(path("moved/x.json")));
  EXPECT_FALSE(fs::exists(path("elsewhere/x.json")));
}

}  // namespace
}  // namespace kinetrace::detail
