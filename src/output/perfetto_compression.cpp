#include "output/perfetto_compression.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "output/small_deflate.h"

#if KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif
#if KINETRACE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace kinetrace::detail {

#if KINETRACE_HAVE_ZLIB

namespace {

// Level 1: the trace is written while the program runs, and a packet chunk is repetitive
// enough (the same names, tracks and small deltas) that the fastest level already takes
// most of what the higher ones would.
constexpr int kLevel = 1;

// A chunk of up to this size (a short trace's only chunk, or a long one's last: the sink
// hands over about a megabyte at a time) is deflated by smallDeflate, with nothing to
// allocate; larger ones by a library, whose tables pay for themselves there.
constexpr std::size_t kSmallChunkBytes = kSmallDeflateMaxInput;

// A chunk is deflated into a whole zlib stream (RFC 1950): bound() says how many bytes the
// stream may take, deflate() writes it at `out`, with that room.

#if KINETRACE_HAVE_LIBDEFLATE
// libdeflate, when the build has it: faster than zlib at level 1 (bench/README.md), and the
// same format, so readers see no difference.
class Deflater {
 public:
  Deflater() : compressor_(libdeflate_alloc_compressor(kLevel)) {
    if (compressor_ == nullptr) {
      throw Error("could not start compressing the trace's packets (libdeflate)");
    }
  }
  ~Deflater() { libdeflate_free_compressor(compressor_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  std::size_t bound(std::size_t inputBytes) {
    return libdeflate_zlib_compress_bound(compressor_, inputBytes);
  }
  std::size_t deflate(std::string_view chunk, unsigned char* out, std::size_t room) {
    const std::size_t size =
        libdeflate_zlib_compress(compressor_, chunk.data(), chunk.size(), out, room);
    if (size == 0) throw Error("compressing the trace's packets failed (libdeflate)");
    return size;
  }

 private:
  libdeflate_compressor* compressor_;
};
#else
// zlib, with its default tables (a window of 32 KiB, 256 KiB in all).
class Deflater {
 public:
  Deflater() {
    if (deflateInit(&z_, kLevel) != Z_OK) {
      throw Error("could not start compressing the trace's packets (zlib)");
    }
  }
  ~Deflater() { deflateEnd(&z_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  std::size_t bound(std::size_t inputBytes) {
    if (deflateReset(&z_) != Z_OK) throw Error("compressing the trace's packets failed (zlib)");
    return deflateBound(&z_, static_cast<uLong>(inputBytes));
  }
  std::size_t deflate(std::string_view chunk, unsigned char* out, std::size_t room) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z_.avail_in = static_cast<uInt>(chunk.size());
    z_.next_out = out;
    z_.avail_out = static_cast<uInt>(room);
    if (::deflate(&z_, Z_FINISH) != Z_STREAM_END) {
      throw Error("compressing the trace's packets failed (zlib)");
    }
    return room - z_.avail_out;
  }

 private:
  z_stream z_{};
};
#endif

// One chunk at a time: deflates it into a compressed_packets packet, framed.
class ChunkCompressor {
 public:
  // The chunk as one framed compressed_packets packet, valid until the next call.
  std::string_view compress(std::string_view chunk) {
    // One whole zlib stream per chunk: a reader inflates each packet on its own.
    if (chunk.size() <= kSmallChunkBytes) {
      return framed(smallDeflateBound(chunk.size()),
                    [&chunk](unsigned char* out, std::size_t /*room*/) {
                      return smallDeflate(reinterpret_cast<const unsigned char*>(chunk.data()),
                                          chunk.size(), out);
                    });
    }
    if (!deflater_) deflater_ = std::make_unique<Deflater>();
    Deflater& deflater = *deflater_;
    return framed(deflater.bound(chunk.size()),
                  [&deflater, &chunk](unsigned char* out, std::size_t room) {
                    return deflater.deflate(chunk, out, room);
                  });
  }

 private:
  // `deflate(out, room)` writes a chunk's zlib stream, of at most `bound` bytes, at `out` and
  // returns its length.
  template <typename Deflate>
  std::string_view framed(std::size_t bound, Deflate deflate) {
    // The frame goes in front: TracePacket (field 1) { compressed_packets (field 50) }.
    constexpr std::size_t kFrameRoom = 4 * 10;
    if (capacity_ < kFrameRoom + bound) {
      capacity_ = kFrameRoom + bound;
      out_.reset(new unsigned char[capacity_]);  // not zeroed: deflate writes what is read
    }
    const std::size_t compressed = deflate(out_.get() + kFrameRoom, bound);

    const uint64_t fieldKey = (uint64_t{pftrace::kPacketCompressedPackets} << 3) | 2;
    const uint64_t packetKey = (uint64_t{pftrace::kTracePacket} << 3) | 2;
    const std::size_t inner =
        proto::varintSize(fieldKey) + proto::varintSize(compressed) + compressed;
    const std::size_t frame = proto::varintSize(packetKey) + proto::varintSize(inner) +
                              proto::varintSize(fieldKey) + proto::varintSize(compressed);
    unsigned char* at = out_.get() + kFrameRoom - frame;
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
    return {reinterpret_cast<const char*>(out_.get() + kFrameRoom - frame), frame + compressed};
  }

  std::unique_ptr<Deflater> deflater_;  // made by the first large chunk
  std::unique_ptr<unsigned char[]> out_;
  std::size_t capacity_ = 0;
};

// Threads that compress chunks side by side: one thread deflating at level 1 (zlib's speed,
// before libdeflate) held back the writing of a torch.profiler-shaped trace. Two keep up, and
// a machine of two cores gets one. Asked once: hardware_concurrency() reads a file in /sys.
std::size_t compressingThreads() {
  static const std::size_t threads = std::thread::hardware_concurrency() > 2 ? 2 : 1;
  return threads;
}

}  // namespace

// Chunks are numbered as they come and written below in that order, whichever thread
// compressed them. Each thread has a compressor of its own; at most one chunk more than
// there are threads waits or is being compressed (write() blocks beyond that).
struct CompressedPacketsOutput::Stream {
  struct Chunk {
    uint64_t number = 0;
    std::string bytes;
  };

  // Before any thread starts, chunks are compressed on the caller's thread: a short trace
  // (one small chunk) starts no thread. A small first chunk is compressed as it comes,
  // without a copy; a large one is kept until the next comes (then threads start) or until
  // commit() (a trace of one large chunk).
  bool wroteFirst = false;
  std::string first;
  ChunkCompressor firstCompressor;

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Chunk> waiting;       // oldest first
  std::vector<std::string> spare;  // emptied chunks, reused for their capacity
  std::size_t held = 0;            // chunks the threads are compressing or writing
  uint64_t numbered = 0;           // chunks handed to the threads so far
  uint64_t written = 0;            // chunks written below, in order
  bool quit = false;
  std::exception_ptr error;
  std::vector<std::thread> threads;

  std::size_t slots() const { return threads.size() + 1; }

  void start(ByteOutput& next, std::size_t count) {
    threads.reserve(count);
    for (std::size_t i = 0; i < count; ++i) threads.emplace_back([this, &next] { run(next); });
  }

  void enqueue(std::string bytes) {
    waiting.push_back(Chunk{numbered++, std::move(bytes)});
    changed.notify_all();
  }

  void run(ByteOutput& next) {
    ChunkCompressor compressor;
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [this] { return quit || !waiting.empty(); });
      if (waiting.empty()) return;  // quit, with nothing left to do
      Chunk chunk = std::move(waiting.front());
      waiting.pop_front();
      ++held;
      const bool failedBefore = error != nullptr;
      lock.unlock();

      std::exception_ptr failed;
      std::string_view packet;
      try {
        if (!failedBefore) packet = compressor.compress(chunk.bytes);
      } catch (...) {
        failed = std::current_exception();
      }

      lock.lock();
      // Written in their order: wait for the chunks before this one.
      changed.wait(lock, [&] { return written == chunk.number; });
      if (failed && !error) error = failed;
      if (!error) {
        // Only the thread holding the next number writes, so the lock can be let go.
        lock.unlock();
        try {
          next.write(packet.data(), packet.size());
        } catch (...) {
          failed = std::current_exception();
        }
        lock.lock();
        if (failed && !error) error = failed;
      }
      ++written;
      --held;
      chunk.bytes.clear();
      spare.push_back(std::move(chunk.bytes));
      changed.notify_all();
    }
  }
};

bool packetCompressionAvailable() {
  return true;
}

CompressedPacketsOutput::CompressedPacketsOutput(std::unique_ptr<ByteOutput> next,
                                                 std::size_t threads)
    : next_(std::move(next)),
      threads_(threads == 0 ? compressingThreads() : threads),
      stream_(std::make_unique<Stream>()) {}

CompressedPacketsOutput::~CompressedPacketsOutput() {
  Stream& s = *stream_;
  if (s.threads.empty()) return;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.quit = true;
    s.waiting.clear();  // without commit() the output is discarded anyway
  }
  s.changed.notify_all();
  for (std::thread& thread : s.threads) thread.join();
}

void CompressedPacketsOutput::write(const char* data, std::size_t size) {
  if (size == 0) return;
  Stream& s = *stream_;
  if (s.threads.empty()) {
    if (!s.wroteFirst && size <= kSmallChunkBytes) {
      s.wroteFirst = true;
      const std::string_view packet = s.firstCompressor.compress({data, size});
      next_->write(packet.data(), packet.size());
      return;
    }
    s.wroteFirst = true;
    if (s.first.empty()) {
      s.first.assign(data, size);
      return;
    }
    // A second chunk: from now on threads compress while the sink encodes.
    s.start(*next_, threads_);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.enqueue(std::move(s.first));
    s.first = std::string();
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  s.changed.wait(lock, [&s] { return s.waiting.size() + s.held < s.slots() || s.error; });
  if (s.error) std::rethrow_exception(s.error);
  std::string chunk;
  if (!s.spare.empty()) {
    chunk = std::move(s.spare.back());
    s.spare.pop_back();
  }
  lock.unlock();
  chunk.assign(data, size);  // the sink reuses its buffer as soon as this returns
  lock.lock();
  s.enqueue(std::move(chunk));
}

void CompressedPacketsOutput::commit() {
  Stream& s = *stream_;
  if (s.threads.empty()) {
    if (!s.first.empty()) {
      const std::string_view packet = s.firstCompressor.compress(s.first);
      next_->write(packet.data(), packet.size());
    }
    s.first = std::string();
  } else {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.changed.wait(lock, [&s] { return (s.waiting.empty() && s.held == 0) || s.error; });
    if (s.error) std::rethrow_exception(s.error);
    s.spare.clear();
  }
  next_->commit();
}

std::string inflatePackets(std::string_view compressed, std::size_t maxBytes) {
  std::optional<std::string> packets = inflatePacketsUpTo(compressed, maxBytes);
  if (!packets) {
    throw Error(fmt::format("compressed packets inflate to more than {} bytes", maxBytes));
  }
  return std::move(*packets);
}

std::optional<std::string> inflatePacketsUpTo(std::string_view compressed, std::size_t maxBytes) {
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
      return std::nullopt;
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

CompressedPacketsOutput::CompressedPacketsOutput(std::unique_ptr<ByteOutput> next, std::size_t)
    : next_(std::move(next)), threads_(0) {
  throw Error("this build cannot compress a trace's packets (built without zlib)");
}
CompressedPacketsOutput::~CompressedPacketsOutput() = default;
void CompressedPacketsOutput::write(const char*, std::size_t) {}
void CompressedPacketsOutput::commit() {}

std::string inflatePackets(std::string_view, std::size_t) {
  throw Error("this trace's packets are compressed, and this build has no zlib to read them");
}

std::optional<std::string> inflatePacketsUpTo(std::string_view, std::size_t) {
  throw Error("this trace's packets are compressed, and this build has no zlib to read them");
}

#endif

}  // namespace kinetrace::detail
