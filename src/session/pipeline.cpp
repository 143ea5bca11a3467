#include "session/pipeline.h"

#include <pthread.h>

#include <utility>

#include "kinetrace/error.h"
#include "model/clock.h"
#include "session/core.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

// How often the pipeline asks CUPTI for buffers whose records are complete, full or not:
// often enough that records do not wait long (and launches do not wait for them), rarely
// enough that the request costs nothing noticeable.
constexpr int64_t kGpuFlushPeriodNs = 1'000'000'000;

}  // namespace

Pipeline::Pipeline(PipelineSetup setup)
    : setup_(std::move(setup)), trace_(std::make_shared<TraceData>()), summary_(setup_.startNs) {
  trace_->tables.pid = setup_.pid;
  trace_->tables.processName = setup_.processName.empty() ? "host" : setup_.processName;
  trace_->startNs = setup_.startNs;
  trace_->header = setup_.header.metadata;
  trace_->outputPath = setup_.outputPath;
  trace_->memoryCapBytes = setup_.budget->cap();
  assembler_ = std::make_unique<Assembler>(trace_->tables, setup_.assembler);
  if (setup_.sink) {
    setup_.sink->begin(setup_.header);  // throws: the caller reports it and records nothing
    writer_ = std::make_unique<EventWriter>(*setup_.sink, trace_->tables, setup_.startNs);
  }
  lastFlushNs_ = setup_.startNs;
  thread_ = std::make_unique<std::thread>([this] {
    // Named so that `top -H` and per-thread CPU accounting show what it is.
    pthread_setname_np(pthread_self(), "kinetrace-pipe");
    run();
  });
}

Pipeline::~Pipeline() {
  stopThread();
  setup_.budget->release(accountedBytes_);
}

void Pipeline::stopThread() {
  if (!thread_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (thread_->joinable()) thread_->join();
  thread_.reset();
}

void Pipeline::abandonInForkedChild() noexcept {
  // The std::thread object refers to a thread of the parent: destroying it joinable would
  // terminate the process, joining it would wait forever.
  (void)thread_.release();
}

void Pipeline::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!quit_) {
    wake_.wait_for(lock, std::chrono::nanoseconds(setup_.periodNs), [this] { return quit_; });
    if (quit_) break;
    lock.unlock();
    try {
      cycle(false);
    } catch (const std::exception& error) {
      // Out of memory in a vector, most likely: the next cycle tries again; what this one
      // held is lost and the losses say so where they can.
      log(LogLevel::Error, "assembling records failed: {}", error.what());
    }
    lock.lock();
  }
}

void Pipeline::cycle(bool final) {
  const int64_t horizon = Clock::instance().nowNs();
  hostDropped_ = Core::instance().recorder().drain(setup_.generation, *assembler_, Clock::instance());
  if (setup_.gpu != nullptr) {
    const bool flush = !final && horizon - lastFlushNs_ >= kGpuFlushPeriodNs;
    if (flush) lastFlushNs_ = horizon;
    setup_.gpu->poll(gpuBatch_, trace_->tables.strings, flush);
    assembler_->addGpu(gpuBatch_);
  }
  assembler_->assemble(horizon, ready_);
  consume(ready_);
  ready_.clear();
  account();
}

void Pipeline::consume(TraceRecords& records) {
  if (records.empty()) return;
  if (writer_) {
    try {
      writer_->write(records);
      trace_->counts.add(records);
      summary_.add(records);
      return;
    } catch (const std::exception& error) {
      // The file is discarded with the sink (a trace appears whole or not at all); what
      // comes from here on is kept in memory, and the trace says what happened.
      trace_->saveError = fmt::format(
          "{}; the {} events written before were lost with the file, and the trace holds what "
          "followed in memory",
          error.what(), trace_->counts.ranges + trace_->counts.apiCalls + trace_->counts.kernels +
                            trace_->counts.memcpys + trace_->counts.memsets + trace_->counts.syncs);
      log(LogLevel::Error, "writing the trace to {} failed: {}", setup_.outputPath,
          trace_->saveError);
      writer_.reset();
      setup_.sink.reset();
    }
  }
  const std::size_t bytes = records.bytes();
  if (!setup_.budget->tryAcquire(bytes)) {
    // A whole cycle's records go together, so no arrow loses one of its ends.
    droppedAssembled_ += records.size();
    return;
  }
  accountedBytes_ += bytes;
  trace_->counts.add(records);
  summary_.add(records);
  trace_->records.append(std::move(records));
}

// What the assembler and the string table hold changes every cycle; the budget follows.
void Pipeline::account() {
  static_assert(sizeof(std::size_t) == 8);
  const std::size_t held = assembler_->heldBytes() + trace_->tables.strings.bytes() +
                           trace_->tables.threads.capacity() * sizeof(ThreadInfo);
  const std::size_t records = trace_->records.bytes();
  const std::size_t now = held + records;
  if (now > accountedBytes_) {
    setup_.budget->forceAcquire(now - accountedBytes_);
  } else {
    setup_.budget->release(accountedBytes_ - now);
  }
  accountedBytes_ = now;
}

std::shared_ptr<TraceData> Pipeline::finish(int64_t stopNs, int64_t syncReturnNs,
                                            const std::function<Metadata(const TraceData&)>& footerFor) {
  stopThread();
  assembler_->setStop(stopNs);
  try {
    cycle(true);
    assembler_->finish(syncReturnNs, ready_);
    consume(ready_);
    ready_.clear();
  } catch (const std::exception& error) {
    log(LogLevel::Error, "assembling the last records failed: {}", error.what());
  }
  account();

  TraceData& t = *trace_;
  t.stopNs = stopNs;
  t.losses = assembler_->losses();
  t.losses.droppedHostEvents += hostDropped_;
  t.losses.droppedAssembledRecords += droppedAssembled_;
  t.clockBounds = assembler_->clockBounds();
  if (setup_.gpu != nullptr) {
    t.devices = setup_.gpu->devices(t.tables.strings);
    if (t.devices.empty()) t.devices = assembler_->devices();
  }
  t.peakMemoryBytes = setup_.budget->peak();
  t.footer = footerFor(t);
  t.summary = summaryToValue(summary_.finish(t.tables, stopNs, t.losses, t.header, t.footer));

  if (writer_) {
    try {
      writer_->finish();
      setup_.sink->end(t.footer);
      t.hasEvents = false;
    } catch (const std::exception& error) {
      t.saveError = fmt::format("{}; the trace's events were lost with the file", error.what());
      log(LogLevel::Error, "completing the trace at {} failed: {}", setup_.outputPath, t.saveError);
      t.hasEvents = false;
    }
    writer_.reset();
    setup_.sink.reset();
  }
  // The trace now belongs to whoever stopped the session, outside the tracer's budget.
  setup_.budget->release(accountedBytes_);
  accountedBytes_ = 0;
  return trace_;
}

}  // namespace kinetrace::detail
