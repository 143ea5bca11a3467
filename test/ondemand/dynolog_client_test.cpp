#include "ondemand/dynolog_client.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ondemand/dynolog_stand_in.h"
#include "support/log.h"
#include "support/test_support.h"

namespace kinetrace::ondemand {
namespace {

using testing::DynologStandIn;
using testing::ScopedEnv;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = std::chrono::seconds(20);

// What the client's callbacks saw, with waits on a condition variable: busy() is asked at
// the start of each poll, so its count says how many polls have begun.
class Observer {
 public:
  bool busy() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++busyCalls_;
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    threadName_ = name;
    threadId_ = std::this_thread::get_id();
    changed_.notify_all();
    return busy_;
  }
  void onConfig(const std::string& config) {
    std::lock_guard<std::mutex> lock(mutex_);
    configs_.push_back(config);
    changed_.notify_all();
  }
  void setBusy(bool busy) {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = busy;
  }
  // Waits until busy() was asked `count` times in all.
  bool waitForPollsBegun(int count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kDeadline, [&] { return busyCalls_ >= count; });
  }
  bool waitForConfigs(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kDeadline, [&] { return configs_.size() >= count; });
  }
  int busyCalls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return busyCalls_;
  }
  std::vector<std::string> configs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return configs_;
  }
  std::string threadName() {
    std::lock_guard<std::mutex> lock(mutex_);
    return threadName_;
  }
  std::thread::id threadId() {
    std::lock_guard<std::mutex> lock(mutex_);
    return threadId_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool busy_ = false;
  int busyCalls_ = 0;
  std::vector<std::string> configs_;
  std::string threadName_;
  std::thread::id threadId_;
};

DynologClientOptions optionsFor(const std::string& dir, double intervalSeconds = 0.02) {
  DynologClientOptions options;
  options.intervalSeconds = intervalSeconds;
  options.socketDir = dir;
  options.identity.jobId = 4242;
  options.identity.pids = {31337, 31336, 1};
  return options;
}

class DynologClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<DynologClient> start(DynologClientOptions options) {
    return std::make_unique<DynologClient>(
        std::move(options), [this] { return observer_.busy(); },
        [this](const std::string& config) { observer_.onConfig(config); });
  }

  TempDir dir_{"dyno"};
  Observer observer_;
};

bool fileExists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

TEST_F(DynologClientTest, PollsWithItsIdentityAndWantsActivitiesWhenIdle) {
  DynologStandIn daemon(dir_.path());
  ASSERT_EQ(daemon.why(), "");
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(daemon.waitForPolls(2));
  for (const auto& poll : daemon.polls()) {
    EXPECT_EQ(poll.type, kPollWantsActivities);
    EXPECT_EQ(poll.count, 3);
    EXPECT_EQ(poll.jobId, 4242);
    EXPECT_EQ(poll.pids, (std::vector<int32_t>{31337, 31336, 1}));
    EXPECT_EQ(poll.sender, dir_.path() + "/" + client->name());
    EXPECT_EQ(poll.payload.size(), 16u + 4u * 3u);
  }
  client->stop();
  EXPECT_GE(client->counts().polls, 2);
  EXPECT_EQ(client->counts().unreachable, 0);
}

// A launcher imports the framework and never uses a GPU: it must not register with the
// daemon, where it would take one of a request's process slots. Polls wait until answers()
// says yes, which is then not asked again.
TEST_F(DynologClientTest, SendsNoPollUntilTheProcessAnswersThenPollsAsUsual) {
  DynologStandIn daemon(dir_.path());
  std::mutex mutex;
  std::condition_variable asked;
  int askedCount = 0;
  bool ready = false;
  DynologClientOptions options = optionsFor(dir_.path());
  options.answers = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    ++askedCount;
    asked.notify_all();
    return ready;
  };
  auto client = start(std::move(options));
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(asked.wait_for(lock, kDeadline, [&] { return askedCount >= 3; }));
    // Three polls were due, none was sent.
    EXPECT_EQ(daemon.pollCount(), 0u);
    ready = true;
  }
  ASSERT_TRUE(daemon.waitForPolls(3));
  client->stop();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_LE(askedCount, 4) << "asked again after it answered";
}

TEST_F(DynologClientTest, RunsOnItsOwnNamedThread) {
  DynologStandIn daemon(dir_.path());
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(observer_.waitForPollsBegun(1));
  EXPECT_EQ(observer_.threadName(), "kinetrace-dyno");
  EXPECT_NE(observer_.threadId(), std::this_thread::get_id());
}

TEST_F(DynologClientTest, PollsAsBusyWhileBusySaysSo) {
  observer_.setBusy(true);
  DynologStandIn daemon(dir_.path());
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(daemon.waitForPolls(2));
  client->stop();
  for (const auto& poll : daemon.polls()) {
    EXPECT_EQ(poll.type, kPollBusy);
    EXPECT_EQ(poll.pids, (std::vector<int32_t>{31337, 31336, 1}));
  }
}

TEST_F(DynologClientTest, HandsAQueuedConfigOverOnce) {
  DynologStandIn daemon(dir_.path());
  daemon.queueConfig("ACTIVITIES_DURATION_MSECS=500\nPROFILE_START_TIME=0");
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(observer_.waitForConfigs(1));
  // More polls, each answered empty: the config is not handed over again.
  const std::size_t seen = daemon.pollCount();
  client->pollNow();
  ASSERT_TRUE(daemon.waitForPolls(seen + 3));
  client->stop();
  EXPECT_EQ(observer_.configs(),
            std::vector<std::string>{"ACTIVITIES_DURATION_MSECS=500\nPROFILE_START_TIME=0"});
  EXPECT_EQ(daemon.configsHanded(), 1u);
  EXPECT_EQ(client->counts().configs, 1);
  EXPECT_GE(client->counts().replies, 1);
  EXPECT_EQ(client->counts().malformed, 0);
}

TEST_F(DynologClientTest, TakesNoConfigWhileBusyAndTakesItOnceIdle) {
  observer_.setBusy(true);
  DynologStandIn daemon(dir_.path());
  daemon.queueConfig("ACTIVITIES_ITERATIONS=20");
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(daemon.waitForPolls(3));
  EXPECT_EQ(daemon.configsHanded(), 0u);
  EXPECT_EQ(daemon.configsQueued(), 1u);
  EXPECT_TRUE(observer_.configs().empty());

  observer_.setBusy(false);
  client->pollNow();
  ASSERT_TRUE(observer_.waitForConfigs(1));
  EXPECT_EQ(observer_.configs(), std::vector<std::string>{"ACTIVITIES_ITERATIONS=20"});
  EXPECT_EQ(daemon.configsHanded(), 1u);
}

TEST_F(DynologClientTest, BindsItsSocketBeforeTheFirstPollAndRemovesItWhenStopped) {
  auto client = start(optionsFor(dir_.path(), 3600));
  const std::string path = dir_.path() + "/" + client->name();
  EXPECT_TRUE(fileExists(path)) << path;
  client->stop();
  EXPECT_FALSE(fileExists(path)) << path;
  client->stop();  // idempotent
  client.reset();
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{});
}

TEST_F(DynologClientTest, KeepsPollingQuietlyWithoutADaemonAndStopsAtOnce) {
  detail::setLogLevel(LogLevel::Debug);
  ::testing::internal::CaptureStderr();
  auto client = start(optionsFor(dir_.path()));
  // busy() begins each poll: once the fourth began, three have failed.
  ASSERT_TRUE(observer_.waitForPollsBegun(4));
  const auto counts = client->counts();
  EXPECT_GE(counts.unreachable, 3);
  EXPECT_EQ(counts.polls, 0);
  EXPECT_EQ(counts.sendErrors, 0);
  client->stop();
  const std::string err = ::testing::internal::GetCapturedStderr();
  detail::setLogLevel(LogLevel::Warning);
  const std::string line = "kinetrace debug: no dynolog at " + dir_.path() + "/dynolog";
  EXPECT_NE(err.find(line), std::string::npos) << err;
  EXPECT_EQ(err.find(line), err.rfind(line)) << "said more than once:\n" << err;
}

TEST_F(DynologClientTest, StopWakesTheThreadAtOnce) {
  // An hour between polls: stop() must not wait for the next one.
  auto client = start(optionsFor(dir_.path(), 3600));
  ASSERT_TRUE(observer_.waitForPollsBegun(1));
  const auto begin = Clock::now();
  client->stop();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(2));
  EXPECT_EQ(client->counts().unreachable, 1);
}

TEST_F(DynologClientTest, PollNowPollsAtOnce) {
  DynologStandIn daemon(dir_.path());
  auto client = start(optionsFor(dir_.path(), 3600));
  ASSERT_TRUE(daemon.waitForPolls(1));
  client->pollNow();
  client->pollNow();
  ASSERT_TRUE(daemon.waitForPolls(2));
  client->stop();
  client->pollNow();  // after stop: nothing, and no hang
  EXPECT_LE(daemon.pollCount(), 3u);
}

TEST_F(DynologClientTest, ReachesADaemonThatStartsLater) {
  detail::setLogLevel(LogLevel::Info);
  ::testing::internal::CaptureStderr();
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(observer_.waitForPollsBegun(3));
  EXPECT_GE(client->counts().unreachable, 2);

  DynologStandIn daemon(dir_.path());
  daemon.queueConfig("ACTIVITIES_DURATION_MSECS=100");
  client->pollNow();
  ASSERT_TRUE(observer_.waitForConfigs(1));
  client->stop();
  const std::string err = ::testing::internal::GetCapturedStderr();
  detail::setLogLevel(LogLevel::Warning);
  EXPECT_EQ(observer_.configs(), std::vector<std::string>{"ACTIVITIES_DURATION_MSECS=100"});
  EXPECT_GE(client->counts().polls, 1);
  const std::string line = "kinetrace info: reached dynolog at " + dir_.path() + "/dynolog";
  EXPECT_NE(err.find(line), std::string::npos) << err;
  EXPECT_EQ(err.find(line), err.rfind(line)) << err;
}

TEST_F(DynologClientTest, CountsAndIgnoresMalformedReplies) {
  DynologStandIn daemon(dir_.path());
  // Answers to the first polls, in order; the config comes after them all, from the same
  // socket, so by the time it is handed over every one of them has been read.
  daemon.queueRawReply(std::string(12, 'x'));                                 // short
  daemon.queueRawReply(DynologStandIn::message("req", "abc").substr(0, 41));  // size mismatch
  daemon.queueRawReply(DynologStandIn::message("ctxt", "abcd"));              // not a "req"
  daemon.queueRawReply(std::string(8, '\0') + std::string(32, 'r'));          // unterminated type
  daemon.queueConfig("ACTIVITIES_DURATION_MSECS=200");
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(observer_.waitForConfigs(1));
  client->stop();
  EXPECT_EQ(client->counts().malformed, 4);
  EXPECT_EQ(client->counts().configs, 1);
  EXPECT_EQ(observer_.configs(), std::vector<std::string>{"ACTIVITIES_DURATION_MSECS=200"});
}

TEST_F(DynologClientTest, IgnoresDatagramsFromAnyoneButTheDaemon) {
  // A stranger's socket in the same directory sends a well-formed config first; the daemon's
  // own comes after it, so once that is handed over the stranger's has been read.
  auto client = start(optionsFor(dir_.path(), 3600));
  {
    TempDir otherDir("dyno_other");
    DynologStandIn stranger(otherDir.path());
    ASSERT_EQ(stranger.why(), "");
    ASSERT_TRUE(stranger.sendTo(dir_.path() + "/" + client->name(),
                                DynologStandIn::message("req", "ACTIVITIES_LOG_FILE=/tmp/evil")));
  }
  DynologStandIn daemon(dir_.path());
  daemon.queueConfig("ACTIVITIES_LOG_FILE=/tmp/good.json");
  client->pollNow();
  ASSERT_TRUE(observer_.waitForConfigs(1));
  client->stop();
  EXPECT_EQ(observer_.configs(), std::vector<std::string>{"ACTIVITIES_LOG_FILE=/tmp/good.json"});
  EXPECT_EQ(client->counts().foreign, 1);
  EXPECT_EQ(client->counts().malformed, 0);
}

TEST_F(DynologClientTest, SurvivesCallbacksThatThrow) {
  DynologStandIn daemon(dir_.path());
  daemon.queueConfig("first");
  daemon.queueConfig("second");
  ::testing::internal::CaptureStderr();
  std::atomic<int> handed{0};
  std::mutex mutex;
  std::condition_variable changed;
  DynologClient client(
      optionsFor(dir_.path()), [] { return false; },
      [&](const std::string&) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++handed;
        }
        changed.notify_all();
        throw std::runtime_error("not now");
      });
  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(changed.wait_for(lock, kDeadline, [&] { return handed.load() >= 2; }));
  }
  client.stop();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kinetrace warning: a dynolog configuration was not taken: not now"),
            std::string::npos)
      << err;
}

TEST_F(DynologClientTest, AForkedChildAbandonsTheClientAndLeavesTheParentsSocket) {
  DynologStandIn daemon(dir_.path());
  auto client = start(optionsFor(dir_.path()));
  ASSERT_TRUE(daemon.waitForPolls(1));
  const std::string path = dir_.path() + "/" + client->name();
  const pid_t child = ::fork();
  if (child == 0) {
    client->abandonInForkedChild();
    client.reset();  // neither joins a thread that is not here nor removes the parent's file
    ::_exit(fileExists(path) ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fileExists(path));
  // The parent's client goes on.
  const std::size_t seen = daemon.pollCount();
  client->pollNow();
  EXPECT_TRUE(daemon.waitForPolls(seen + 1));
}

TEST_F(DynologClientTest, AClientThatCannotBindSaysSoOnceAndStopsCleanly) {
  detail::setLogLevel(LogLevel::Warning);
  ::testing::internal::CaptureStderr();
  auto client = start(optionsFor(dir_.path() + "/missing"));
  client->stop();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kinetrace warning: cannot bind the dynolog client socket " + dir_.path() +
                     "/missing/" + client->name()),
            std::string::npos)
      << err;
  EXPECT_EQ(client->counts().polls, 0);
}

TEST(DynologClientOptionsTest, ReadsTheEnvironment) {
  ScopedEnv interval("ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", "0.05");
  ScopedEnv dir("KINETO_IPC_SOCKET_DIR", "/tmp/dyno");
  ScopedEnv job("SLURM_JOB_ID", "777");
  const auto options = DynologClientOptions::fromEnvironment();
  EXPECT_DOUBLE_EQ(options.intervalSeconds, 0.05);
  EXPECT_EQ(options.socketDir, "/tmp/dyno");
  EXPECT_EQ(options.identity.jobId, 777);
  ASSERT_GE(options.identity.pids.size(), 2u);
  EXPECT_EQ(options.identity.pids[0], ::getpid());
  EXPECT_EQ(options.identity.pids[1], ::getppid());
}

TEST(DynologClientOptionsTest, DefaultsWithoutTheEnvironment) {
  ScopedEnv interval("ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", nullptr);
  ScopedEnv dir("KINETO_IPC_SOCKET_DIR", nullptr);
  ScopedEnv job("SLURM_JOB_ID", nullptr);
  const auto options = DynologClientOptions::fromEnvironment();
  EXPECT_DOUBLE_EQ(options.intervalSeconds, 5);
  EXPECT_EQ(options.socketDir, "");
  EXPECT_EQ(options.identity.jobId, 0);
}

TEST(DynologClientOptionsTest, RefusesAnIntervalThatIsNotAPositiveNumberWithAWarning) {
  for (const char* bad : {"0", "-1", "abc", "5s", "", "nan", "inf"}) {
    ScopedEnv interval("ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", bad);
    ::testing::internal::CaptureStderr();
    const auto options = DynologClientOptions::fromEnvironment();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_DOUBLE_EQ(options.intervalSeconds, 5) << bad;
    EXPECT_NE(err.find(std::string("kinetrace warning: ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=\"") +
                       bad + "\" is not"),
              std::string::npos)
        << bad << ": " << err;
  }
}

}  // namespace
}  // namespace kinetrace::ondemand
