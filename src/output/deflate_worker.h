#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

// A thread beside the Perfetto sink that deflates a trace's first packets (a short trace's
// only ones) while the sink is still encoding the rest, so that the sink's end waits for
// the last piece only, not for the whole stream.
//
// Why a thread that lives on: a short trace takes about 130 us to write as JSON on the
// GPU machine, and on such virtual machines starting and joining a thread takes 50-85 us,
// more than deflating the packets saves. The one thread here is started by the first
// trace that uses it and then waits, asleep, for the next; while a trace streams to it, it
// polls for more input for a while before it sleeps again, so that handing over a piece
// costs the sink a store and a check, not a system call.
//
// One stream at a time, process-wide: a trace that finds the thread busy with another (two
// traces written at once) deflates its packets at its end, as without it.

namespace kinetrace::detail {

class StreamedDeflate {
 public:
  // A claim on the thread for one stream, or nullptr when it is busy with another stream or
  // cannot be had: a machine of one core, a process forked from the one that started it, a
  // thread that could not be started.
  static std::unique_ptr<StreamedDeflate> claim();

  // Waits for the thread to be done with the stream (finishing it if finish() was not
  // called), then lets the next trace claim it.
  ~StreamedDeflate();
  StreamedDeflate(const StreamedDeflate&) = delete;
  StreamedDeflate& operator=(const StreamedDeflate&) = delete;

  // Bytes that can still be appended (the stream holds up to kSmallDeflateMaxInput).
  std::size_t room() const;
  // Appends bytes to the stream's input; the thread compresses them while the caller goes on.
  void append(const char* data, std::size_t size);
  // Waits for the thread to compress the rest; returns the whole zlib stream, valid while
  // this claim lives.
  std::string_view finish();

 private:
  explicit StreamedDeflate(void* worker) : worker_(worker) {}
  void* worker_;  // deflate_worker.cpp's Worker
  std::size_t size_ = 0;
  bool finished_ = false;
  std::string_view result_;
};

}  // namespace kinetrace::detail
