#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "correlate/assembler.h"
#include "host/host_recorder.h"
#include "kinetrace/sink.h"
#include "model/gpu_source.h"
#include "model/memory_budget.h"
#include "model/trace_data.h"
#include "output/summary_builder.h"
#include "output/trace_events.h"

namespace kinetrace::detail {

struct PipelineSetup {
  int64_t startNs = 0;
  uint64_t generation = 0;   // the host recorder's, for this recording (set by run())
  GpuSource* gpu = nullptr;  // nullptr: host activity only
  MemoryBudget* budget = nullptr;
  AssemblerOptions assembler;
  // Where events go while recording; nullptr keeps them in memory (within the budget).
  std::unique_ptr<Sink> sink;
  std::string outputPath;
  TraceHeader header;  // for the sink's begin()
  int64_t pid = 0;
  std::string processName;
  int64_t periodNs = 100'000'000;  // how often the pipeline thread drains and assembles
};

// One recording's path of a record, on a thread of its own ("kinetrace-pipe"): every period
// it drains the host recorder, decodes what CUPTI handed over, assembles what is complete
// and passes it on -- written to the sink, or kept in memory when there is none -- so what
// the tracer holds is set by the memory budget, not by the window's length.
//
// When writing fails (disk full, say), the error is kept and what follows is held in memory
// instead: the returned trace then has the rest and says what happened.
class Pipeline {
 public:
  // What an open sink holds, its write buffer (ChromeJsonSink: 1 MiB, plus zlib's state for
  // gzip), counted against the cap while recording to an output.
  static constexpr std::size_t kSinkBytes = (std::size_t{1} << 20) + (std::size_t{256} << 10);
  // The least cap that holds a sink and room to record besides (a host chunk and names).
  static constexpr std::size_t kLeastCapWithSinkBytes =
      kSinkBytes + 2 * sizeof(RecordChunk) + (std::size_t{64} << 10);

  // Opens the output (begin()); throws what the sink throws. Nothing runs yet.
  explicit Pipeline(PipelineSetup setup);
  // Starts the pipeline thread on the host recorder's recording `generation`.
  void run(uint64_t generation);
  // Stops the thread if finish() was not called (the recording is abandoned).
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  int64_t startNs() const { return setup_.startNs; }
  // Ends the window now and returns its end: the pipeline thread's cycle under way takes no
  // host event stamped after it, and no other cycle starts. Call before recording ends,
  // then stopThread().
  int64_t beginStop();
  // Ends the pipeline thread after its current cycle; what is recorded from then on waits
  // for finish().
  void stopThread();
  // After stopThread() and the GPU source's finishWindow(): the last drain and poll, the
  // assembler's finish, and the end of the output (with `footerFor(trace)` as the footer).
  // Runs on the calling thread.
  std::shared_ptr<TraceData> finish(int64_t stopNs, int64_t syncReturnNs,
                                    const std::function<Metadata(const TraceData&)>& footerFor);

  // In a child made by fork(): the thread does not exist here; forget it without joining.
  void abandonInForkedChild() noexcept;

 private:
  void loop();
  // Drains host events stamped up to `untilNs`, polls the GPU source and passes on what
  // is complete by `horizonNs`.
  void cycle(int64_t horizonNs, int64_t untilNs);
  void consume(TraceRecords& records);
  void account();

  PipelineSetup setup_;
  std::shared_ptr<TraceData> trace_;  // tables, held records, counts, losses
  std::unique_ptr<Assembler> assembler_;
  std::unique_ptr<EventWriter> writer_;
  SummaryBuilder summary_;
  GpuBatch gpuBatch_;
  TraceRecords ready_;
  uint64_t hostDropped_ = 0;
  uint64_t droppedAssembled_ = 0;   // batches the budget had no room for
  uint64_t recordsWritten_ = 0;     // events to the sink, so a failed write can say what it lost
  std::size_t decodeRoom_ = 0;      // GpuSource::decodeRoomBytes(), counted while recording
  std::size_t accountedBytes_ = 0;  // what this pipeline counts in the budget right now

  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace kinetrace::detail
