#include "analysis/byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

#include "analysis/read_budget.h"
#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

constexpr std::size_t kReadChunkBytes = std::size_t{1} << 20;
constexpr const char* kGzipBuffers = "gzip's buffers";

[[noreturn]] void failWithErrno(const std::string& path, const char* doing) {
  throw Error(fmt::format("cannot read {}: {} failed: {}", path, doing, std::strerror(errno)));
}

}  // namespace

#ifdef KINETRACE_HAVE_ZLIB
namespace {

// zlib's allocations (its state and its 32 KB window) from the budget. Each block starts
// with its size, for giving it back.
constexpr std::size_t kBlockHeader = alignof(std::max_align_t);

voidpf budgetAlloc(voidpf opaque, uInt items, uInt size) {
  auto* budget = static_cast<ReadBudget*>(opaque);
  const std::size_t bytes = std::size_t{items} * size + kBlockHeader;
  if (!budget->tryTake(bytes + kAllocationOverheadBytes)) return Z_NULL;
  auto* block = static_cast<unsigned char*>(std::malloc(bytes));
  if (block == nullptr) {
    budget->giveBack(bytes + kAllocationOverheadBytes);
    return Z_NULL;
  }
  std::memcpy(block, &bytes, sizeof bytes);
  return block + kBlockHeader;
}

void budgetFree(voidpf opaque, voidpf address) {
  if (address == Z_NULL) return;
  auto* block = static_cast<unsigned char*>(address) - kBlockHeader;
  std::size_t bytes = 0;
  std::memcpy(&bytes, block, sizeof bytes);
  std::free(block);
  static_cast<ReadBudget*>(opaque)->giveBack(bytes + kAllocationOverheadBytes);
}

}  // namespace

struct ByteSource::Gzip {
  explicit Gzip(ReadBudget& budget) : inputHold(budget) {
    inputHold.take(kReadChunkBytes + kAllocationOverheadBytes, kGzipBuffers);
    input.reset(new unsigned char[kReadChunkBytes]);
    stream.zalloc = budgetAlloc;
    stream.zfree = budgetFree;
    stream.opaque = &budget;
  }
  BudgetHold inputHold;
  z_stream stream{};
  // Not zeroed: a fresh megabyte zeroed is 256 page faults, most of them for nothing when the
  // file is small.
  std::unique_ptr<unsigned char[]> input;
  bool inputEnded = false;
  bool memberEnded = false;  // the last gzip member ended cleanly
  uint64_t membersDone = 0;
};
#else
struct ByteSource::Gzip {};
#endif

ByteSource::ByteSource(std::string path, ReadBudget& budget)
    : path_(std::move(path)), budget_(budget) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) failWithErrno(path_, "open");
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    ::close(fd_);
    failWithErrno(path_, "stat");
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd_);
    throw Error(fmt::format("cannot read {}: it is a directory", path_));
  }
  if (S_ISREG(info.st_mode)) fileBytes_ = static_cast<uint64_t>(info.st_size);

  // The magic bytes are read, not read at an offset: a pipe cannot be read twice. They are
  // kept and consumed as the first bytes of the stream.
  unsigned char magic[2] = {0, 0};
  std::size_t got = 0;
  try {
    while (got < sizeof magic) {
      const std::size_t n = readRaw(magic + got, sizeof magic - got);
      if (n == 0) break;
      got += n;
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
  rawHead_.assign(reinterpret_cast<const char*>(magic), got);
  rawConsumed_ = 0;
  compressed_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!compressed_) return;
#ifdef KINETRACE_HAVE_ZLIB
  try {
    gzip_ = new Gzip(budget_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  // 16 + MAX_WBITS: a gzip header and trailer around the deflate data.
  const int status = inflateInit2(&gzip_->stream, 16 + MAX_WBITS);
  if (status != Z_OK) {
    delete gzip_;
    gzip_ = nullptr;
    ::close(fd_);
    if (status == Z_MEM_ERROR) budget_.refuse(kGzipBuffers);
    throw Error(fmt::format("cannot read {}: zlib could not start", path_));
  }
#else
  ::close(fd_);
  fd_ = -1;
  throw Error(fmt::format(
      "cannot read {}: it is gzip-compressed and this kinetrace was built without zlib; "
      "decompress it first (gunzip -k)",
      path_));
#endif
}

ByteSource::~ByteSource() {
#ifdef KINETRACE_HAVE_ZLIB
  if (gzip_ != nullptr) {
    inflateEnd(&gzip_->stream);
    delete gzip_;
  }
#endif
  if (fd_ >= 0) ::close(fd_);
}

uint64_t ByteSource::consumedBytes() const {
#ifdef KINETRACE_HAVE_ZLIB
  if (gzip_ != nullptr) return rawConsumed_ - gzip_->stream.avail_in;
#endif
  return rawConsumed_;
}

std::size_t ByteSource::readRaw(unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  if (!rawHead_.empty()) {
    const std::size_t n = std::min(size, rawHead_.size());
    std::memcpy(data, rawHead_.data(), n);
    rawHead_.erase(0, n);
    rawConsumed_ += n;
    return n;
  }
  while (true) {
    const ssize_t got = ::read(fd_, data, size);
    if (got >= 0) {
      rawConsumed_ += static_cast<uint64_t>(got);
      return static_cast<std::size_t>(got);
    }
    if (errno != EINTR) failWithErrno(path_, "read");
  }
}

std::string_view ByteSource::peek(std::size_t size) {
  std::size_t have = lookahead_.size();
  if (have < size) {
    lookahead_.resize(size);
    while (have < size) {
      const std::size_t got = readContent(lookahead_.data() + have, size - have);
      if (got == 0) break;
      have += got;
    }
    lookahead_.resize(have);
  }
  return std::string_view(lookahead_).substr(0, size);
}

std::size_t ByteSource::read(char* data, std::size_t size) {
  if (!lookahead_.empty() && size > 0) {
    const std::size_t n = std::min(size, lookahead_.size());
    std::memcpy(data, lookahead_.data(), n);
    lookahead_.erase(0, n);
    contentRead_ += n;
    return n;
  }
  const std::size_t got = readContent(data, size);
  contentRead_ += got;
  return got;
}

std::size_t ByteSource::readContent(char* data, std::size_t size) {
  if (!compressed_) return readRaw(reinterpret_cast<unsigned char*>(data), size);
#ifdef KINETRACE_HAVE_ZLIB
  z_stream& z = gzip_->stream;
  z.next_out = reinterpret_cast<Bytef*>(data);
  z.avail_out = static_cast<uInt>(size);
  while (z.avail_out == size) {
    if (z.avail_in == 0 && !gzip_->inputEnded) {
      const std::size_t got = readRaw(gzip_->input.get(), kReadChunkBytes);
      gzip_->inputEnded = got == 0;
      z.next_in = gzip_->input.get();
      z.avail_in = static_cast<uInt>(got);
    }
    if (z.avail_in == 0 && gzip_->inputEnded) {
      if (gzip_->memberEnded) return 0;
      throw Error(fmt::format(
          "cannot read {}: the gzip data is truncated (the file ends inside the compressed "
          "stream, after {} bytes of it)",
          path_, rawConsumed_));
    }
    if (gzip_->memberEnded) {
      // Another gzip member follows (concatenated .gz files are one stream).
      inflateReset(&z);
      gzip_->memberEnded = false;
    }
    const int status = inflate(&z, Z_NO_FLUSH);
    if (status == Z_STREAM_END) {
      gzip_->memberEnded = true;
      ++gzip_->membersDone;
    } else if (status == Z_MEM_ERROR) {
      budget_.refuse(kGzipBuffers);
    } else if (status != Z_OK && status != Z_BUF_ERROR) {
      throw Error(fmt::format("cannot read {}: the gzip data is corrupt ({})", path_,
                              z.msg != nullptr ? z.msg : "inflate failed"));
    }
  }
  return size - z.avail_out;
#else
  (void)data;
  return 0;
#endif
}

}  // namespace kinetrace::detail
