#include "session/pipeline.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "kinetrace/error.h"
#include "model/clock.h"
#include "session/core.h"
#include "support/log.h"

namespace kinetrace::detail {
Pipeline::Pipeline(PipelineSetup setup)
    : setup_(std::move(setup)), trace_(std::make_shared<TraceData>()), summary_(setup_.startNs) {
  trace_->tables.pid = setup_.pid;
  trace_->tables.processName = setup_.processName.empty() ? "host" : setup_.processName;
  trace_->startNs = setup_.startNs;
  trace_->header = setup_.header.metadata;
  trace_->outputPath = setup_.outputPath;
  trace_->memoryCapBytes = setup_.budget->cap();
  // Records decoded from a GPU buffer exist before account() sees them: their room is set
  // aside for the whole window.
  decodeRoom_ = setup_.gpu != nullptr ? setup_.gpu->decodeRoomBytes() : 0;
  // Names may take a quarter of the cap: enough for every real program's distinct names,
  // and a program that makes a new name per event cannot grow the table with the window.
  // The first names have room set aside (1/64 of the cap, 1 MiB at most: thousands
  // of names), so records filling the cap do not cost the kept ones their names.
  const std::size_t cap = setup_.budget->cap();
  trace_->tables.strings.setByteLimit(cap / 4, setup_.budget,
                                      std::min<std::size_t>(cap / 64, 1 << 20));
  assembler_ = std::make_unique<Assembler>(trace_->tables, setup_.assembler);
  if (setup_.sink) {
    setup_.sink->begin(setup_.header);  // throws: the caller reports it and records nothing
    writer_ = std::make_unique<EventWriter>(*setup_.sink, trace_->tables, setup_.startNs);
  }
  // What the pipeline holds from the start (the sink's buffer) is counted before the host
  // recorder starts taking chunks, so those see it and the total stays within the cap.
  account();
}

void Pipeline::run(uint64_t generation) {
  setup_.generation = generation;
  thread_ = std::make_unique<std::thread>([this] {
    // Named so that `top -H` and per-thread CPU accounting show what it is.
    pthread_setname_np(pthread_self(), "kinetrace-pipe");
    loop();
  });
}

Pipeline::~Pipeline() {
  stopThread();
  setup_.budget->release(accountedBytes_);
  trace_->tables.strings.releaseBudget();
}

int64_t Pipeline::beginStop() {
  int64_t stopNs;
  {
    // Read under the lock a cycle reads its horizon under: a horizon read before is earlier.
    std::lock_guard<std::mutex> lock(mutex_);
    stopNs = Clock::instance().nowNs();
    quit_ = true;
  }
  wake_.notify_all();
  return stopNs;
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

void Pipeline::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!quit_) {
    wake_.wait_for(lock, std::chrono::nanoseconds(setup_.periodNs), [this] { return quit_; });
    if (quit_) break;
    // Read under the lock that beginStop() takes: a cycle's horizon is never later than
    // the stop time, so it cannot take an event a late writer stamped after the window.
    const int64_t horizon = Clock::instance().nowNs();
    lock.unlock();
    try {
      cycle(horizon, horizon);
    } catch (const std::exception& error) {
      // Out of memory in a vector, most likely: the next cycle tries again; what this one
      // held is lost and the losses say so where they can.
      log(LogLevel::Error, "assembling records failed: {}", error.what());
    }
    lock.lock();
  }
}

void Pipeline::cycle(int64_t horizonNs, int64_t untilNs) {
  hostDropped_ =
      Core::instance().recorder().drain(setup_.generation, *assembler_, Clock::instance(), untilNs);
  bool moreGpu = setup_.gpu != nullptr;
  do {
    if (moreGpu) {
      // One activity buffer at a time, each assembled, written and accounted before the
      // next is decoded (see GpuSource::poll). Buffers are asked for every gpu_flush_ms by
      // a thread of the source's own (cupti/periodic_flusher.h); asking from here could
      // wait on CUPTI while a program thread, inside a CUPTI callback, waits on us
      // (cudaProfilerStop stopping the session).
      moreGpu = setup_.gpu->poll(gpuBatch_, trace_->tables.strings);
      assembler_->addGpu(gpuBatch_);
    }
    assembler_->assemble(horizonNs, ready_);
    consume(ready_);
    ready_.clear();
    account();
  } while (moreGpu);
}

void Pipeline::consume(TraceRecords& records) {
  if (records.empty()) return;
  if (writer_) {
    try {
      writer_->write(records);
      trace_->counts.add(records);
      summary_.add(records);
      recordsWritten_ += records.size();
      return;
    } catch (const std::exception& error) {
      // The file is discarded with the sink (a trace appears whole or not at all); what
      // comes from here on is kept in memory, and the trace says what happened.
      trace_->saveError = fmt::format(
          "{}; the {} events written before were lost with the file, and the trace holds "
          "what followed in memory",
          error.what(), recordsWritten_);
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
// When the growth would pass the cap (records pour in faster than their links resolve, or
// links never come), what the assembler waits on gives way first, so the tracer stays
// within its cap as far as anything can be given up.
void Pipeline::account() {
  auto held = [&] {
    // The string table takes its room from the budget itself, as it grows.
    return decodeRoom_ + assembler_->heldBytes() +
           trace_->tables.threads.capacity() * sizeof(ThreadInfo) + (setup_.sink ? kSinkBytes : 0) +
           trace_->records.bytes();
  };
  std::size_t now = held();
  if (now > accountedBytes_) {
    const std::size_t after = setup_.budget->used() + (now - accountedBytes_);
    if (after > setup_.budget->cap()) {
      // What the assembler gives up goes out as it is (unlinked, written): straight to the
      // sink, or into the trace kept in memory as far as the cap allows.
      assembler_->shed(after - setup_.budget->cap());
      assembler_->takeReady(ready_);
      consume(ready_);
      ready_.clear();
      now = held();
      // Still over: host event chunks pooled for reuse give their room back.
      if (now > accountedBytes_) {
        const std::size_t over = setup_.budget->used() + (now - accountedBytes_);
        if (over > setup_.budget->cap()) {
          Core::instance().recorder().releasePooled(over - setup_.budget->cap());
        }
      }
    }
  }
  if (now > accountedBytes_) {
    setup_.budget->forceAcquire(now - accountedBytes_);
  } else {
    setup_.budget->release(accountedBytes_ - now);
  }
  accountedBytes_ = now;
}

std::shared_ptr<TraceData> Pipeline::finish(
    int64_t stopNs, int64_t syncReturnNs,
    const std::function<Metadata(const TraceData&)>& footerFor) {
  stopThread();
  assembler_->setStop(stopNs);
  try {
    // Everything left: what is stamped after the stop is counted out of the window.
    cycle(Clock::instance().nowNs(), INT64_MAX);
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
  t.losses.droppedNames = t.tables.strings.dropped();
  t.losses.namesCut = Core::instance().recorder().namesCut(setup_.generation);
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
  t.tables.strings.releaseBudget();
  return trace_;
}

}  // namespace kinetrace::detail
