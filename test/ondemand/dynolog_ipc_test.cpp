#include "ondemand/dynolog_ipc.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <string>

#include "support/test_support.h"

namespace kinetrace::ondemand {
namespace {

using testing::ScopedEnv;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) out.push_back(static_cast<char>(value));
  return out;
}

std::string zeros(std::size_t count) {
  return std::string(count, '\0');
}

TEST(DynologMessageTest, EncodesTheHeaderThenThePayload) {
  const std::string datagram = encodeMessage("req", "abc");
  const std::string expected = bytes({3, 0, 0, 0, 0, 0, 0, 0}) + "req" + zeros(29) + "abc";
  ASSERT_EQ(datagram.size(), kDynologHeaderBytes + 3);
  EXPECT_EQ(datagram, expected);
}

TEST(DynologMessageTest, EncodesAnEmptyPayloadAsAHeaderOfSizeZero) {
  EXPECT_EQ(encodeMessage("req", ""), zeros(8) + "req" + zeros(29));
}

TEST(DynologMessageTest, CutsALongTypeSoThatItStaysTerminated) {
  const std::string datagram = encodeMessage(std::string(40, 't'), "");
  ASSERT_EQ(datagram.size(), kDynologHeaderBytes);
  EXPECT_EQ(datagram.substr(8), std::string(31, 't') + '\0');
}

TEST(DynologMessageTest, DecodesWhatItEncodes) {
  auto message = decodeMessage(encodeMessage("req", "ACTIVITIES_DURATION_MSECS=500"));
  ASSERT_TRUE(message.ok()) << message.why();
  EXPECT_EQ(message.value().type, "req");
  EXPECT_EQ(message.value().payload, "ACTIVITIES_DURATION_MSECS=500");
}

TEST(DynologMessageTest, RefusesADatagramShorterThanAHeader) {
  auto message = decodeMessage(zeros(39));
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.why(), "a dynolog datagram of 39 bytes is shorter than its 40-byte header");
}

TEST(DynologMessageTest, RefusesASizeThatIsNotThePayloads) {
  std::string datagram = encodeMessage("req", "abc");
  datagram.pop_back();
  auto message = decodeMessage(datagram);
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.why(), "a dynolog datagram's header says 3 payload bytes, but 2 follow it");

  auto longer = decodeMessage(encodeMessage("req", "abc") + "d");
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(longer.why(), "a dynolog datagram's header says 3 payload bytes, but 4 follow it");
}

TEST(DynologMessageTest, RefusesATypeWithoutItsNul) {
  auto message = decodeMessage(zeros(8) + std::string(32, 'x'));
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.why(), "a dynolog datagram's type is not NUL-terminated within its 32 bytes");
}

TEST(DynologPollTest, EncodesTypeCountJobAndPidsLittleEndian) {
  Poll poll;
  poll.type = kPollWantsActivities;
  poll.jobId = 0x0102030405060708;
  poll.pids = {100, 0x01020304, 1};
  const std::string expected = bytes({2,   0, 0, 0,              // type
                                      3,   0, 0, 0,              // n
                                      8,   7, 6, 5, 4, 3, 2, 1,  // jobid
                                      100, 0, 0, 0,              // pids[0]
                                      4,   3, 2, 1,              // pids[1]
                                      1,   0, 0, 0});            // pids[2]
  EXPECT_EQ(encodePoll(poll), expected);
  EXPECT_EQ(encodePoll(poll).size(), kPollFixedBytes + 4 * 3);
}

TEST(DynologPollTest, EncodesABusyPollAsTypeZero) {
  Poll poll;
  poll.type = kPollBusy;
  poll.pids = {7};
  EXPECT_EQ(encodePoll(poll), bytes({0, 0, 0, 0, 1, 0, 0, 0}) + zeros(8) + bytes({7, 0, 0, 0}));
}

TEST(DynologPollTest, DecodesWhatItEncodes) {
  Poll poll;
  poll.type = kPollWantsActivities;
  poll.jobId = 987654321;
  poll.pids = {4242, 4241, 1};
  auto decoded = decodePoll(encodePoll(poll));
  ASSERT_TRUE(decoded.ok()) << decoded.why();
  EXPECT_EQ(decoded.value().type, kPollWantsActivities);
  EXPECT_EQ(decoded.value().jobId, 987654321);
  EXPECT_EQ(decoded.value().pids, poll.pids);
}

TEST(DynologPollTest, RefusesAPayloadShorterThanItsFixedPart) {
  auto decoded = decodePoll(zeros(15));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.why(), "a dynolog poll of 15 bytes is shorter than its 16 fixed bytes");
}

TEST(DynologPollTest, RefusesALengthThatIsNotItsCount) {
  Poll poll;
  poll.pids = {1, 2};
  std::string payload = encodePoll(poll);
  payload.pop_back();
  auto decoded = decodePoll(payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.why(), "a dynolog poll of 2 pids should be 24 bytes, not 23");
}

TEST(DynologPollTest, RefusesANegativeCount) {
  auto decoded = decodePoll(bytes({2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}) + zeros(8));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.why(), "a dynolog poll counts -1 pids");
}

TEST(DynologAddressTest, AnAbstractNameIsNulNameNul) {
  auto address = dynologAddress("dynolog", "");
  ASSERT_TRUE(address.ok()) << address.why();
  const auto& [sockaddr, length] = address.value();
  EXPECT_EQ(sockaddr.sun_family, AF_UNIX);
  EXPECT_EQ(length, sizeof(sa_family_t) + std::strlen("dynolog") + 2);
  EXPECT_EQ(length, 2u + 7u + 2u);  // sa_family_t is 2 bytes on Linux
  EXPECT_EQ(std::string(sockaddr.sun_path, 9), std::string("\0dynolog\0", 9));
}

TEST(DynologAddressTest, ADirectoryMakesAFilePathCountingItsNul) {
  for (const std::string dir : {"/tmp/dyno", "/tmp/dyno/"}) {
    auto address = dynologAddress("dynolog", dir);
    ASSERT_TRUE(address.ok()) << address.why();
    const auto& [sockaddr, length] = address.value();
    EXPECT_STREQ(sockaddr.sun_path, "/tmp/dyno/dynolog");
    EXPECT_EQ(length, offsetof(sockaddr_un, sun_path) + std::strlen("/tmp/dyno/dynolog") + 1);
  }
}

TEST(DynologAddressTest, RefusesANameThatDoesNotFit) {
  const std::string name(107, 'n');  // with its two NULs, one byte over sun_path's 108
  auto address = dynologAddress(name, "");
  ASSERT_FALSE(address.ok());
  EXPECT_EQ(address.why(), "the abstract socket name \"" + name + "\" is longer than 106 bytes");
  EXPECT_TRUE(dynologAddress(std::string(106, 'n'), "").ok());

  const std::string dir = "/" + std::string(100, 'd');
  auto path = dynologAddress("dynolog", dir);
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.why(), "the socket path " + dir +
                            "/dynolog is longer than a Unix socket's 107 "
                            "bytes (KINETO_IPC_SOCKET_DIR is too long)");
}

TEST(DynologAddressTest, RefusesAnEmptyName) {
  auto address = dynologAddress("", "");
  ASSERT_FALSE(address.ok());
  EXPECT_EQ(address.why(), "a dynolog socket needs a name");
}

TEST(DynologAddressTest, ClientNamesAreThePrefixAnd32RandomHexDigits) {
  std::set<std::string> names;
  for (int i = 0; i < 8; ++i) {
    const std::string name = randomClientName();
    ASSERT_EQ(name.size(), std::strlen(kDynologClientPrefix) + 32) << name;
    EXPECT_EQ(name.rfind(kDynologClientPrefix, 0), 0u) << name;
    EXPECT_EQ(name.find_first_not_of("0123456789abcdef", std::strlen(kDynologClientPrefix)),
              std::string::npos)
        << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 8u);
}

TEST(PidAndAncestorsTest, StartsWithThisProcessThenItsParent) {
  const auto pids = pidAndAncestors(static_cast<int32_t>(::getpid()));
  ASSERT_GE(pids.size(), 2u);
  EXPECT_LE(pids.size(), 11u);
  EXPECT_EQ(pids[0], ::getpid());
  EXPECT_EQ(pids[1], ::getppid());
  for (int32_t pid : pids) EXPECT_GT(pid, 0);
}

TEST(PidAndAncestorsTest, StopsAtTheAskedNumberOfAncestors) {
  const auto self = static_cast<int32_t>(::getpid());
  EXPECT_EQ(pidAndAncestors(self, 0), std::vector<int32_t>{self});
  const auto one = pidAndAncestors(self, 1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1], ::getppid());
}

TEST(PidAndAncestorsTest, AProcessThatIsGoneIsItsOwnListOnly) {
  const auto dead = static_cast<int32_t>(testing::deadPid());
  EXPECT_EQ(pidAndAncestors(dead), std::vector<int32_t>{dead});
}

TEST(PidAndAncestorsTest, ReadsTheParentAfterTheLastParenthesisOfTheName) {
  // A command name with spaces and ')' in it: the fields after it start after the last ')'.
  const pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_NAME, "a) b (c) d", 0, 0, 0);
    const auto pids = pidAndAncestors(static_cast<int32_t>(::getpid()), 1);
    ::_exit(pids.size() == 2 && pids[1] == ::getppid() ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(JobIdTest, IsSlurmJobIdWhenSet) {
  ScopedEnv job("SLURM_JOB_ID", "123456");
  EXPECT_EQ(jobIdFromEnvironment(), 123456);
}

TEST(JobIdTest, IsZeroWhenUnset) {
  ScopedEnv job("SLURM_JOB_ID", nullptr);
  EXPECT_EQ(jobIdFromEnvironment(), 0);
}

TEST(JobIdTest, IsZeroWhenNotADecimalNumber) {
  for (const char* garbage : {"", "abc", "12x", "-3", " 7", "99999999999999999999"}) {
    ScopedEnv job("SLURM_JOB_ID", garbage);
    EXPECT_EQ(jobIdFromEnvironment(), 0) << garbage;
  }
}

}  // namespace
}  // namespace kinetrace::ondemand
