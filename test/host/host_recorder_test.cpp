#include "host/host_recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kinetrace/host.h"

// The host recorder on its own: recording, draining while recording, chunk reuse, the
// memory budget, concurrency with start/stop, and fork().

namespace kinetrace::detail {
namespace {

using namespace kinetrace::literals;

// Keeps what a drain hands over, as plain values.
class Collected : public HostEventVisitor {
 public:
  struct Event {
    char kind;  // B E I C A a (api call) S (async begin) F (async end)
    uint32_t instance;
    int64_t timeNs;
    uint64_t id;
    std::string name;
    bool literal;
    std::string args;  // encoded (model/event_args.h)
  };
  std::vector<Event> events;
  std::map<uint32_t, int64_t> tids;

  void onThread(uint32_t instance, int64_t tid, std::string_view) override { tids[instance] = tid; }
  void onRangeBegin(uint32_t instance, int64_t t, uint64_t id, HostName name) override {
    events.push_back({'B', instance, t, id, std::string(name.text), name.literal != nullptr,
                      std::string(name.args)});
  }
  void onRangeEnd(uint32_t instance, int64_t t, uint64_t id) override {
    events.push_back({'E', instance, t, id, "", false, ""});
  }
  void onInstant(uint32_t instance, int64_t t, HostName name) override {
    events.push_back({'I', instance, t, 0, std::string(name.text), name.literal != nullptr,
                      std::string(name.args)});
  }
  void onCounter(uint32_t instance, int64_t t, HostName name, double value) override {
    events.push_back(
        {'C', instance, t, static_cast<uint64_t>(value), std::string(name.text), false, ""});
  }
  void onApiCall(const ApiCallRecord& call) override {
    events.push_back({'a', call.thread, call.startNs, call.correlationId, "", false, ""});
  }
  void onAsyncBegin(uint32_t instance, int64_t t, uint64_t id, HostName name) override {
    events.push_back({'S', instance, t, id, std::string(name.text), false, std::string(name.args)});
  }
  void onAsyncEnd(uint32_t instance, int64_t t, uint64_t id) override {
    events.push_back({'F', instance, t, id, "", false, ""});
  }
  std::size_t count(char kind) const {
    return std::count_if(events.begin(), events.end(),
                         [kind](const Event& e) { return e.kind == kind; });
  }
};

class HostRecorderTest : public ::testing::Test {
 protected:
  HostRecorder& recorder = HostRecorder::instance();
  const Clock& clock = Clock::instance();

  // Starts a recording, runs `body`, stops, and returns every event drained.
  template <typename Body>
  Collected record(Body body, std::size_t capBytes = 64 << 20) {
    MemoryBudget budget(capBytes);
    const uint64_t generation = recorder.startRecording(budget);
    body();
    recorder.stopRecording();
    Collected collected;
    dropped = recorder.drain(generation, collected, clock);
    recorder.trimPool();
    return collected;
  }
  uint64_t dropped = 0;
};

TEST_F(HostRecorderTest, CopiedNamesTravelInsideTheChunkAndLiteralsByAddress) {
  std::string temporary = "copied name " + std::string(100, 'x');
  Collected got = record([&] {
    beginRange(std::string_view(temporary));
    temporary.assign(temporary.size(), '?');  // the caller's buffer changes at once
    endRange();
    beginRange("literal"_kt);
    endRange();
  });
  ASSERT_EQ(got.count('B'), 2u);
  EXPECT_EQ(got.events[0].name, "copied name " + std::string(100, 'x'));
  EXPECT_FALSE(got.events[0].literal);
  EXPECT_EQ(got.events[2].name, "literal");
  EXPECT_TRUE(got.events[2].literal);
}

TEST_F(HostRecorderTest, AnEndNamesTheRangeItCloses) {
  Collected got = record([] {
    beginRange("outer"_kt);
    beginRange("inner"_kt);
    endRange();
    endRange();
  });
  ASSERT_EQ(got.events.size(), 4u);
  EXPECT_EQ(got.events[2].id, got.events[1].id) << "the first end closes the inner range";
  EXPECT_EQ(got.events[3].id, got.events[0].id);
}

// Typed arguments (an NVTX payload) travel after the name in the same slots; the events
// after them are read where they are.
TEST_F(HostRecorderTest, ArgumentsTravelWithTheirEventAndTheNextEventsFollow) {
  std::string key = "Message size [bytes]";
  std::string text = "Sum";
  Collected got = record([&] {
    const EventArg args[] = {
        EventArg::unsignedValue(key, 4u << 20), EventArg::textValue("Reduction operation", text),
        EventArg::signedValue("Peer rank", -1), EventArg::doubleValue("ratio", 0.5)};
    beginRangeWithArgs("NCCL: ncclAllReduce", args, 4);
    key.assign(key.size(), '?');  // copied at the call
    text = "Max";
    endRange();
    instantWithArgs("mark", args, 1);
    endAsyncRange(startAsyncRangeWithArgs("async", args + 2, 2));
    beginRangeWithArgs("no args", args, 0);
    endRange();
  });
  ASSERT_EQ(got.events.size(), 7u);
  auto decoded = [](const std::string& bytes) {
    std::vector<std::string> out;
    forEachEventArg(bytes, [&](const EventArg& arg) {
      const std::string value = arg.type == ArgType::Text     ? std::string(arg.text)
                                : arg.type == ArgType::Signed ? std::to_string(arg.asSigned())
                                : arg.type == ArgType::Double ? std::to_string(arg.asDouble())
                                                              : std::to_string(arg.number);
      out.push_back(std::string(arg.key) + "=" + value);
    });
    return out;
  };
  EXPECT_EQ(got.events[0].name, "NCCL: ncclAllReduce");
  EXPECT_EQ(decoded(got.events[0].args),
            (std::vector<std::string>{"Message size [bytes]=4194304", "Reduction operation=Sum",
                                      "Peer rank=-1", "ratio=" + std::to_string(0.5)}));
  EXPECT_EQ(got.events[1].kind, 'E');
  EXPECT_EQ(got.events[1].id, got.events[0].id);
  EXPECT_EQ(got.events[2].name, "mark");
  EXPECT_EQ(decoded(got.events[2].args).size(), 1u);
  EXPECT_EQ(got.events[3].name, "async");
  EXPECT_EQ(decoded(got.events[3].args),
            (std::vector<std::string>{"Peer rank=-1", "ratio=0.500000"}));
  EXPECT_EQ(got.events[4].kind, 'F');
  EXPECT_EQ(got.events[5].name, "no args");
  EXPECT_TRUE(got.events[5].args.empty());
}

// A char array on the stack is copied: nothing read at collection time points into it.
TEST_F(HostRecorderTest, AStackBufferNameIsCopiedNotStoredByAddress) {
  Collected got = record([] {
    char buffer[64] = "stack name";
    {
      Range range(buffer);
      std::memset(buffer, 'Z', sizeof buffer - 1);
    }
  });
  ASSERT_EQ(got.count('B'), 1u);
  EXPECT_EQ(got.events[0].name, "stack name");
  EXPECT_FALSE(got.events[0].literal);
}

TEST_F(HostRecorderTest, DrainingWhileRecordingRecyclesChunks) {
  MemoryBudget budget(64 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  Collected got;
  constexpr int kRounds = 50;
  constexpr int kEventsPerRound = 20000;  // several chunks a round
  std::size_t peakChunks = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kEventsPerRound; ++i) counter("c"_kt, i);
    recorder.drain(generation, got, clock);
    peakChunks = std::max(peakChunks, recorder.chunksAllocated());
  }
  recorder.stopRecording();
  recorder.drain(generation, got, clock);
  recorder.trimPool();
  EXPECT_EQ(got.count('C'), static_cast<std::size_t>(kRounds * kEventsPerRound));
  // One round needs five chunks; without recycling fifty rounds would need 250.
  EXPECT_LE(peakChunks, 16u) << "chunks are reused once drained";
  EXPECT_LE(budget.peak(), 16 * sizeof(RecordChunk));
}

TEST_F(HostRecorderTest, WhenTheBudgetRefusesEventsAreDroppedAndCounted) {
  // More events than the chunks kept from earlier recordings (kChunkPoolReserve) can hold.
  constexpr std::size_t kEvents = (kChunkPoolReserve + 8) * kChunkSlots;
  Collected got = record(
      [] {
        for (std::size_t i = 0; i < kEvents; ++i) instant("refused"_kt);
      },
      /*capBytes=*/0);
  EXPECT_EQ(got.count('I') + dropped, kEvents) << "every event is recorded or counted";
  EXPECT_GT(dropped, 0u);
}

// Under a cap of one chunk, a thread whose chunk is full and refused another hands the full
// one over: the drain recycles it and the thread records again, instead of holding it
// unsealed (never recycled) and dropping everything from then on.
TEST_F(HostRecorderTest, AFullChunkRefusedASuccessorIsRecycledAndRecordingResumes) {
  MemoryBudget budget(sizeof(RecordChunk));
  const uint64_t generation = recorder.startRecording(budget);
  Collected got;
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < kChunkSlots + 600; ++i) instant("round"_kt);
    recorder.drain(generation, got, clock);
  }
  recorder.stopRecording();
  const uint64_t droppedAtStop = recorder.drain(generation, got, clock);
  recorder.trimPool();
  EXPECT_GE(got.count('I'), 3 * kChunkSlots) << droppedAtStop << " dropped";
  EXPECT_EQ(got.count('I') + droppedAtStop, kRounds * (kChunkSlots + 600));
}

TEST_F(HostRecorderTest, EventsAfterStopAreNeitherRecordedNorCountedAsDrops) {
  MemoryBudget budget(64 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  instant("inside"_kt);
  recorder.stopRecording();
  for (int i = 0; i < 10000; ++i) instant("after"_kt);
  Collected got;
  EXPECT_EQ(recorder.drain(generation, got, clock), 0u);
  recorder.trimPool();
  ASSERT_EQ(got.count('I'), 1u);
  EXPECT_EQ(got.events[0].name, "inside");
}

TEST_F(HostRecorderTest, LaunchesWithoutAnOpenRangeBelongToTheLatestOpenAsyncRangeOfTheThread) {
  MemoryBudget budget(64 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  const uint64_t first = startAsyncRange("first");
  const uint64_t second = startAsyncRange("second");
  EXPECT_EQ(HostRecorder::innermostOpenRange(), second);
  {
    Range nested("nested"_kt);
    EXPECT_NE(HostRecorder::innermostOpenRange(), second) << "a push/pop range wins";
  }
  std::thread([second] { endAsyncRange(second); }).join();  // ended on another thread
  EXPECT_EQ(HostRecorder::innermostOpenRange(), first);
  endAsyncRange(first);
  EXPECT_EQ(HostRecorder::innermostOpenRange(), 0u);
  recorder.stopRecording();
  Collected got;
  recorder.drain(generation, got, clock);
  recorder.trimPool();
  EXPECT_EQ(got.count('S'), 2u);
  EXPECT_EQ(got.count('F'), 2u);
}

// Checks events as they are drained, keeping nothing but open begins: fast enough for the
// millions a stress test makes.
class CheckingVisitor : public HostEventVisitor {
 public:
  std::size_t ranges = 0;
  std::string firstProblem;

  void onThread(uint32_t, int64_t, std::string_view) override {}
  void onRangeBegin(uint32_t instance, int64_t t, uint64_t id, HostName name) override {
    if (!validName(name.text)) problem("corrupt name \"" + std::string(name.text) + "\"");
    begins_[{instance, id}] = t;
    ++ranges;
  }
  void onRangeEnd(uint32_t instance, int64_t t, uint64_t id) override {
    auto begin = begins_.find({instance, id});
    if (begin == begins_.end()) return;
    if (t < begin->second) problem("negative duration");
    begins_.erase(begin);
  }
  void onInstant(uint32_t, int64_t, HostName name) override {
    if (name.text != "tick") problem("corrupt instant \"" + std::string(name.text) + "\"");
  }
  void onCounter(uint32_t, int64_t, HostName, double) override { problem("unexpected counter"); }
  void onApiCall(const ApiCallRecord&) override { problem("unexpected call"); }
  void onAsyncBegin(uint32_t, int64_t, uint64_t, HostName) override { problem("unexpected async"); }
  void onAsyncEnd(uint32_t, int64_t, uint64_t) override { problem("unexpected async"); }

 private:
  // "n<digits>-<digits>"
  static bool validName(std::string_view name) {
    const std::size_t dash = name.find('-');
    auto digits = [](std::string_view s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return name.size() > 2 && name[0] == 'n' && dash != std::string_view::npos &&
           digits(name.substr(1, dash - 1)) && digits(name.substr(dash + 1));
  }
  void problem(std::string what) {
    if (firstProblem.empty()) firstProblem = std::move(what);
  }
  std::map<std::pair<uint32_t, uint64_t>, int64_t> begins_;
};

// 64 threads record while another cycles start/stop quickly: every drained name is one
// that was written, every end follows its begin. Before chunks were sealed by their owners,
// a chunk went back to the pool under a writer and names like "n8n652" came out. Bounded by
// work: each cycle the writers make a fixed number of ranges (the first half racing the
// start, the rest racing the drain and the stop), meeting the cycling thread at atomics.
TEST_F(HostRecorderTest, ConcurrentRecordingAcrossFastStartStopCyclesNeverCorruptsEvents) {
  constexpr int kWriters = 64;
  constexpr int kCycles = 40;
  constexpr int kRangesPerHalf = 32;
  std::atomic<int> released{-1};  // writers begin cycle n once this is n
  std::atomic<int> halfDone{0};   // writers past the first half of this cycle
  std::atomic<int> started{-1};   // recording of cycle n is on
  std::atomic<int> done{0};       // writers done with this cycle
  auto waitFor = [](const std::atomic<int>& value, int wanted) {
    while (value.load() < wanted) std::this_thread::yield();
  };
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      int made = 0;
      auto makeRanges = [&](int count) {
        for (int i = 0; i < count; ++i, ++made) {
          const std::string name = "n" + std::to_string(t) + "-" + std::to_string(made % 1000);
          beginRange(std::string_view(name));
          instant("tick"_kt);
          endRange();
        }
      };
      for (int cycle = 0; cycle < kCycles; ++cycle) {
        waitFor(released, cycle);
        makeRanges(kRangesPerHalf);
        ++halfDone;
        waitFor(started, cycle);
        makeRanges(kRangesPerHalf);
        ++done;
      }
    });
  }
  std::size_t ranges = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    // Room for a chunk per thread and a few more: writers outrun the checks, drops are fine.
    MemoryBudget budget(72 * sizeof(RecordChunk));
    CheckingVisitor checked;
    halfDone = 0;
    done = 0;
    released = cycle;
    const uint64_t generation = recorder.startRecording(budget);
    started = cycle;
    waitFor(halfDone, kWriters);
    recorder.drain(generation, checked, clock);
    recorder.stopRecording();
    recorder.drain(generation, checked, clock);
    recorder.trimPool();
    waitFor(done, kWriters);
    ASSERT_EQ(checked.firstProblem, "") << "in cycle " << cycle;
    ranges += checked.ranges;
  }
  for (auto& w : writers) w.join();
  EXPECT_GT(ranges, 0u);
}

// A drain that does not know yet where the window ends takes nothing stamped after its
// limit: those events, and the thread's events after them, wait for the next drain.
TEST_F(HostRecorderTest, ADrainTakesNothingStampedAfterItsLimitAndTheNextDrainTakesTheRest) {
  MemoryBudget budget(64 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  instant("before"_kt);
  const int64_t limit = clock.nowNs();
  while (clock.nowNs() <= limit) {
  }
  instant("after"_kt);
  Collected first;
  recorder.drain(generation, first, clock, limit);
  recorder.stopRecording();
  Collected rest;
  recorder.drain(generation, rest, clock);
  recorder.trimPool();
  ASSERT_EQ(first.count('I'), 1u);
  EXPECT_EQ(first.events[0].name, "before");
  ASSERT_EQ(rest.count('I'), 1u);
  EXPECT_EQ(rest.events[0].name, "after");
  EXPECT_GT(rest.events[0].timeNs, limit);
}

// fork() while threads record: the child inherited the recorder's lock held by a thread that
// does not exist there, and hung in registerThread. The child must record on its own, with
// none of the parent's events.
TEST_F(HostRecorderTest, AChildForkedWhileThreadsRecordRecordsAloneAndDoesNotHang) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers' own runtimes are not safe here: GCC 12's ASan does not take its
  // allocator's locks at fork (the child's first malloc can wait forever for a lock a parent
  // thread held) and TSan kills a child of a multi-threaded process that starts a thread. The
  // plain build runs this test.
  GTEST_SKIP() << "a forked child of a multi-threaded process cannot allocate (ASan) or start "
                  "threads (TSan) under this sanitizer";
#endif
  MemoryBudget budget(256 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&done] {
      // New threads keep registering: the lock is taken often.
      for (int n = 0; n < 300 && !done.load(std::memory_order_relaxed); ++n) {
        std::thread([] {
          for (int i = 0; i < 100; ++i) instant("parent"_kt);
        }).join();
      }
    });
  }
  int hung = 0, failed = 0;
  for (int child = 0; child < 30; ++child) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(10);  // a hang fails the child by SIGALRM
      MemoryBudget childBudget(64 << 20);
      HostRecorder& r = HostRecorder::instance();
      const uint64_t g = r.startRecording(childBudget);
      std::thread([] { instant("child"_kt); }).join();
      instant("child"_kt);
      r.stopRecording();
      Collected got;
      r.drain(g, got, Clock::instance());
      const bool onlyChild =
          got.count('I') == 2 &&
          std::all_of(got.events.begin(), got.events.end(),
                      [](const Collected::Event& e) { return e.name == "child"; });
      ::_exit(onlyChild ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) ++hung;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) ++failed;
  }
  done = true;
  for (auto& w : writers) w.join();
  recorder.stopRecording();
  Collected parent;
  recorder.drain(generation, parent, clock);
  recorder.trimPool();
  EXPECT_EQ(hung, 0) << "children hung";
  EXPECT_EQ(failed, 0) << "children saw the parent's events or lost their own";
  EXPECT_GT(parent.count('I'), 0u) << "the parent kept recording";
}

}  // namespace
}  // namespace kinetrace::detail
