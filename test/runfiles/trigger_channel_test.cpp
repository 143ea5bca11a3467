// The trigger channel on its own: requests travel whole (any path), a connection gets one
// deadline for its whole request however slowly it sends, idle connections are bounded and
// never starve a real request, an answer the client did not stay for is reported, and the
// sockets of killed processes are cleared away. Times are given to the reader, never waited.

#include "runfiles/trigger_channel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace kinetrace::runfiles {
namespace {

using detail::Result;
using kinetrace::testing::TempDir;

constexpr int64_t kTimeoutNs = 1000;  // the reader's clock is the test's: any unit will do

// A client socket connected to `path`.
int connectTo(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0)
      << std::strerror(errno);
  return fd;
}

void sendText(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// What the server said before closing (blocks until it closes: call only once it has).
std::string received(int fd) {
  std::string text;
  char chunk[256];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) {
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

class TriggerChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controlDir_ = dir_.path() + "/control";
    ::setenv("KINETRACE_CONTROL_DIR", controlDir_.c_str(), 1);
    Result<TriggerListener> listener = listenForTriggers("run1", ::getpid());
    ASSERT_TRUE(listener.ok()) << listener.why();
    listenFd_ = listener.value().fd;
    socket_ = listener.value().path;
  }
  void TearDown() override {
    for (int fd : clients_) ::close(fd);
    if (listenFd_ >= 0) ::close(listenFd_);
    ::unsetenv("KINETRACE_CONTROL_DIR");
  }
  int client() {
    clients_.push_back(connectTo(socket_));
    return clients_.back();
  }

  TempDir dir_;
  std::string controlDir_;
  std::string socket_;
  int listenFd_ = -1;
  std::vector<int> clients_;
};

TEST_F(TriggerChannelTest, TheDeadlineIsForTheWholeRequestNotForEachByte) {
  RequestReader reader(listenFd_, {16, kTimeoutNs});
  const int slow = client();
  EXPECT_TRUE(reader.service(0).empty());
  ASSERT_EQ(reader.waiting(), 1u);
  EXPECT_EQ(reader.nextDeadlineNs(), kTimeoutNs);
  // A byte now and then does not move the deadline.
  for (int64_t now : {kTimeoutNs / 4, kTimeoutNs / 2, kTimeoutNs - 1}) {
    sendText(slow, "s");
    EXPECT_TRUE(reader.service(now).empty());
    EXPECT_EQ(reader.nextDeadlineNs(), kTimeoutNs);
  }
  sendText(slow, "t");
  EXPECT_TRUE(reader.service(kTimeoutNs).empty());
  EXPECT_EQ(reader.waiting(), 0u);
  EXPECT_EQ(received(slow), "refused the request did not arrive within 0 ms of connecting\n");
}

TEST_F(TriggerChannelTest, ARequestThatArrivesWholeIsServedAtOnce) {
  RequestReader reader(listenFd_, {16, kTimeoutNs});
  const int fd = client();
  sendText(fd, "status\n");
  std::vector<RequestReader::Request> requests = reader.service(0);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].line, "status");
  EXPECT_TRUE(requests[0].peerAllowed);
  EXPECT_TRUE(answer(requests[0].fd, "ok step=0 state=idle"));
  EXPECT_EQ(received(fd), "ok step=0 state=idle\n");
}

TEST_F(TriggerChannelTest, IdleConnectionsAreBoundedAndDoNotStarveARealRequest) {
  RequestReader reader(listenFd_, {4, kTimeoutNs});
  std::vector<int> idle;
  for (int i = 0; i < 50; ++i) {
    idle.push_back(client());
    EXPECT_TRUE(reader.service(0).empty());
    EXPECT_LE(reader.waiting(), 4u);
  }
  const int real = client();
  sendText(real, "status\n");
  std::vector<RequestReader::Request> requests = reader.service(0);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].line, "status");
  EXPECT_TRUE(answer(requests[0].fd, "ok"));
  EXPECT_EQ(received(real), "ok\n");
  // The oldest idle ones were let go, saying why.
  EXPECT_EQ(received(idle[0]),
            "refused too many connections waiting; this one sent no request in time\n");
  EXPECT_LE(reader.waiting(), 4u);
}

TEST_F(TriggerChannelTest, AnAnswerTheClientDidNotStayForIsReported) {
  RequestReader reader(listenFd_, {16, kTimeoutNs});
  const int fd = client();
  sendText(fd, "status\n");
  std::vector<RequestReader::Request> requests = reader.service(0);
  ASSERT_EQ(requests.size(), 1u);
  ::close(fd);
  clients_.pop_back();
  EXPECT_FALSE(answer(requests[0].fd, "ok"));
}

TEST_F(TriggerChannelTest, AnOutputPathWithSpacesTravelsWhole) {
  TriggerRequest request;
  request.durationNs = 5;
  request.output = "/tmp/my traces/100% done.json";
  const std::string line = formatRequest(request);
  EXPECT_EQ(line.find(' ', line.find("output=")), std::string::npos) << line;
  const Result<TriggerRequest> back = parseRequest(line);
  ASSERT_TRUE(back.ok()) << back.why();
  EXPECT_EQ(back.value().output, request.output);
  const Result<TriggerRequest> bad = parseRequest("record duration_ns=5 output=/a%2");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.why(), "\"output\" needs a percent-encoded path, got \"/a%2\"");
}

// An escaped NUL cut the path short where the system read it; a newline cut the answer.
TEST_F(TriggerChannelTest, AnOutputPathWithANulOrAControlCharacterIsRefused) {
  EXPECT_EQ(parseRequest("record duration_ns=5 output=/tmp/a%00.json").why(),
            "the path holds a NUL byte, which would cut it short");
  EXPECT_EQ(parseRequest("record duration_ns=5 output=/tmp/a%0Ab.json").why(),
            "the path holds a control character (0x0A)");
  EXPECT_EQ(parseRequest("record duration_ns=5 output=/tmp/a%09b.json").why(),
            "the path holds a control character (0x09)");
}

TEST_F(TriggerChannelTest, ANumberFollowedByAnythingElseIsRefused) {
  EXPECT_EQ(parseRequest("record duration_ns=12abc").why(),
            "\"duration_ns\" needs a whole number, got \"12abc\"");
  EXPECT_EQ(parseRequest("record steps=5 start_step= ").why(),
            "\"start_step\" needs a whole number, got \"\"");
}

TEST_F(TriggerChannelTest, ADurationTooLargeForANumberIsRefusedSayingSo) {
  const Result<TriggerRequest> parsed = parseRequest("record duration_ns=99999999999999999999");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.why(), "\"duration_ns\" needs a whole number, got \"99999999999999999999\"");
}

TEST_F(TriggerChannelTest, TheSocketOfAKilledProcessIsRemovedAndALiveOneKept) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's own socket, left behind when it is killed.
    _exit(listenForTriggers("run1", ::getpid()).ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string stale = controlDir_ + "/" + socketName("run1", child);
  struct stat info {};
  ASSERT_EQ(::stat(stale.c_str(), &info), 0) << "a process that dies leaves its socket";
  EXPECT_EQ(pidOfSocket(stale), child);

  EXPECT_EQ(removeStaleSockets(), 1);
  EXPECT_NE(::stat(stale.c_str(), &info), 0);
  EXPECT_EQ(::stat(socket_.c_str(), &info), 0) << "the live process's socket stays";
  EXPECT_EQ(socketsOfJob("run1"), std::vector<std::string>{socket_});
}

TEST_F(TriggerChannelTest, AControlDirectoryOfAnotherOwnerOrOpenToOthersSaysWhatIsWrong) {
  ASSERT_EQ(::chmod(controlDir_.c_str(), 0755), 0);
  try {
    controlDirectory();
    FAIL() << "a directory open to others was accepted";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()),
              "the control directory " + controlDir_ +
                  " is open to other users (mode 0755, not 0700); triggers are off (remove it, "
                  "or set KINETRACE_CONTROL_DIR to a directory of your own)");
  }
}

}  // namespace
}  // namespace kinetrace::runfiles
