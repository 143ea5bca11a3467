#include "output/perfetto_compression.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

#if KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace kinetrace::detail {

#if KINETRACE_HAVE_ZLIB

namespace {

// Level 1: the trace is written while the program runs, and a packet chunk is repetitive
// enough (the same names, tracks and small deltas) that the fastest level already takes
// most of what the higher ones would.
constexpr int kLevel = 1;

// One chunk at a time: deflate() it into a compressed_packets packet and hand that on.
//
// zlib is set up by the first chunk, not before: a trace of one small chunk (the usual
// short trace) gets a window and hash table fitted to it. Their memory is zeroed when
// zlib starts, and for a trace of a few kilobytes that set-up, 256 KiB at zlib's
// defaults, cost more than compressing the trace; a window as large as the input
// compresses it exactly as the full one would.
class ChunkCompressor {
 public:
  ChunkCompressor() = default;
  ~ChunkCompressor() {
    if (started_) deflateEnd(&z_);
  }
  ChunkCompressor(const ChunkCompressor&) = delete;
  ChunkCompressor& operator=(const ChunkCompressor&) = delete;

  // `onlyChunk`: no chunk follows this one, so zlib's tables can be sized to it.
  void compress(const std::string& chunk, ByteOutput& next, bool onlyChunk = false) {
    // One whole zlib stream per chunk: a reader inflates each packet on its own.
    if (!started_) {
      start(onlyChunk ? chunk.size() : kWholeWindow);
    } else if (deflateReset(&z_) != Z_OK) {
      throw Error("compressing the trace's packets failed (zlib)");
    }
    const uLong bound = deflateBound(&z_, static_cast<uLong>(chunk.size()));
    // The frame goes in front: TracePacket (field 1) { compressed_packets (field 50) }.
    constexpr std::size_t kFrameRoom = 4 * 10;
    out_.resize(kFrameRoom + bound);
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z_.avail_in = static_cast<uInt>(chunk.size());
    z_.next_out = out_.data() + kFrameRoom;
    z_.avail_out = static_cast<uInt>(bound);
    if (deflate(&z_, Z_FINISH) != Z_STREAM_END) {
      throw Error("compressing the trace's packets failed (zlib)");
    }
    const std::size_t compressed = bound - z_.avail_out;

    const uint64_t fieldKey = (uint64_t{pftrace::kPacketCompressedPackets} << 3) | 2;
    const uint64_t packetKey = (uint64_t{pftrace::kTracePacket} << 3) | 2;
    const std::size_t inner =
        proto::varintSize(fieldKey) + proto::varintSize(compressed) + compressed;
    const std::size_t frame = proto::varintSize(packetKey) + proto::varintSize(inner) +
                              proto::varintSize(fieldKey) + proto::varintSize(compressed);
    unsigned char* at = out_.data() + kFrameRoom - frame;
    const auto put = [&at](uint64_t value) {
      while (value >= 0x80) {
        *at++ = static_cast<unsigned char>(value | 0x80);
        value >>= 7;
      }
      *at++ = static_cast<unsigned char>(value);
    };
    put(packetKey);
    put(inner);
    put(fieldKey);
    put(compressed);
    next.write(reinterpret_cast<const char*>(out_.data() + kFrameRoom - frame), frame + compressed);
  }

 private:
  static constexpr std::size_t kWholeWindow = std::size_t{1} << 15;

  // zlib's window is 2^windowBits bytes (9 to 15) and its hash table 2^(memLevel + 7)
  // entries (memLevel 1 to 9, 8 by default): both no larger than `inputBytes` needs.
  void start(std::size_t inputBytes) {
    int windowBits = 9;
    while (windowBits < 15 && (std::size_t{1} << windowBits) < inputBytes) ++windowBits;
    const int memLevel = std::max(1, windowBits - 7);
    if (deflateInit2(&z_, kLevel, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw Error("could not start compressing the trace's packets (zlib)");
    }
    started_ = true;
  }

  z_stream z_{};
  bool started_ = false;
  std::vector<unsigned char> out_;
};

constexpr std::size_t kSlots = 2;

}  // namespace

// Two slots: the chunk being compressed and the one waiting for it.
struct CompressedPacketsOutput::Stream {
  ChunkCompressor compressor;
  // The first chunk, until a second comes: a trace of one chunk (most small ones) is
  // compressed at commit() on the caller's thread, and no thread is started for it.
  std::string first;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> waiting;  // at most kSlots, oldest first
  std::vector<std::string> spare;   // emptied chunks, reused for their capacity
  bool busy = false;                // the thread holds a chunk
  bool quit = false;
  std::exception_ptr error;
  std::thread thread;

  void run(ByteOutput& next) {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [this] { return quit || !waiting.empty(); });
      if (waiting.empty()) return;  // quit, with nothing left to do
      std::string chunk = std::move(waiting.front());
      waiting.pop_front();
      busy = true;
      lock.unlock();
      std::exception_ptr failed;
      try {
        if (!error) compressor.compress(chunk, next);
      } catch (...) {
        failed = std::current_exception();
      }
      chunk.clear();
      lock.lock();
      if (failed) error = failed;
      spare.push_back(std::move(chunk));
      busy = false;
      changed.notify_all();
    }
  }
};

bool packetCompressionAvailable() {
  return true;
}

CompressedPacketsOutput::CompressedPacketsOutput(std::unique_ptr<ByteOutput> next)
    : next_(std::move(next)), stream_(std::make_unique<Stream>()) {}

CompressedPacketsOutput::~CompressedPacketsOutput() {
  if (!stream_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stream_->mutex);
    stream_->quit = true;
    stream_->waiting.clear();  // without commit() the output is discarded anyway
  }
  stream_->changed.notify_all();
  stream_->thread.join();
}

void CompressedPacketsOutput::write(const char* data, std::size_t size) {
  if (size == 0) return;
  Stream& s = *stream_;
  if (!s.thread.joinable()) {
    if (s.first.empty()) {
      s.first.assign(data, size);
      return;
    }
    // A second chunk: from now on a thread compresses while the sink encodes.
    s.waiting.push_back(std::move(s.first));
    s.first = std::string();
    s.thread = std::thread([&s, &next = *next_] { s.run(next); });
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  s.changed.wait(lock, [&s] { return s.waiting.size() + (s.busy ? 1 : 0) < kSlots || s.error; });
  if (s.error) std::rethrow_exception(s.error);
  std::string chunk;
  if (!s.spare.empty()) {
    chunk = std::move(s.spare.back());
    s.spare.pop_back();
  }
  lock.unlock();
  chunk.assign(data, size);  // the sink reuses its buffer as soon as this returns
  lock.lock();
  s.waiting.push_back(std::move(chunk));
  s.changed.notify_all();
}

void CompressedPacketsOutput::commit() {
  Stream& s = *stream_;
  if (!s.thread.joinable()) {
    if (!s.first.empty()) s.compressor.compress(s.first, *next_, /*onlyChunk=*/true);
    s.first = std::string();
  } else {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.changed.wait(lock, [&s] { return (s.waiting.empty() && !s.busy) || s.error; });
    if (s.error) std::rethrow_exception(s.error);
    s.spare.clear();
  }
  next_->commit();
}

std::string inflatePackets(std::string_view compressed, std::size_t maxBytes) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw Error("could not start inflating packets (zlib)");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    const std::size_t had = out.size();
    if (had >= maxBytes) {
      inflateEnd(&z);
      throw Error(fmt::format("compressed packets inflate to more than {} bytes", maxBytes));
    }
    out.resize(std::min(maxBytes, std::max<std::size_t>(had * 2, compressed.size() * 4 + 4096)));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + had);
    z.avail_out = static_cast<uInt>(out.size() - had);
    status = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
    if (status == Z_BUF_ERROR && z.avail_in == 0) status = Z_DATA_ERROR;  // cut short
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string why = z.msg != nullptr ? z.msg : "not a whole zlib stream";
      inflateEnd(&z);
      throw Error("compressed packets cannot be inflated: " + why);
    }
  }
  inflateEnd(&z);
  return out;
}

#else  // without zlib

struct CompressedPacketsOutput::Stream {};

bool packetCompressionAvailable() {
  return false;
}

CompressedPacketsOutput::CompressedPacketsOutput(std::unique_ptr<ByteOutput> next)
    : next_(std::move(next)) {
  throw Error("this build cannot compress a trace's packets (built without zlib)");
}
CompressedPacketsOutput::~CompressedPacketsOutput() = default;
void CompressedPacketsOutput::write(const char*, std::size_t) {}
void CompressedPacketsOutput::commit() {}

std::string inflatePackets(std::string_view, std::size_t) {
  throw Error("this trace's packets are compressed, and this build has no zlib to read them");
}

#endif

}  // namespace kinetrace::detail
