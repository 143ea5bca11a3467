#include "output/gzip_output.h"

#include <zlib.h>

#include <memory>

#include "kinetrace/error.h"

namespace kinetrace::detail {

struct GzipOutput::Stream {
  z_stream z{};
  static constexpr std::size_t kOutBytes = 256 * 1024;
  std::unique_ptr<unsigned char[]> out{new unsigned char[kOutBytes]};  // not zeroed: zlib writes it
};

bool gzipAvailable() { return true; }

GzipOutput::GzipOutput(std::unique_ptr<ByteOutput> next)
    : next_(std::move(next)), stream_(std::make_unique<Stream>()) {
  // windowBits 15 + 16 asks zlib for a gzip header and trailer. Level 3 keeps compression
  // from dominating the save time; traces are repetitive and compress well even so.
  if (deflateInit2(&stream_->z, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error("could not start gzip compression (zlib)");
  }
}

GzipOutput::~GzipOutput() { deflateEnd(&stream_->z); }

void GzipOutput::pump(int flush) {
  z_stream& z = stream_->z;
  int status = Z_OK;
  do {
    z.next_out = stream_->out.get();
    z.avail_out = static_cast<uInt>(Stream::kOutBytes);
    status = deflate(&z, flush);
    if (status == Z_STREAM_ERROR) throw Error("gzip compression failed (zlib)");
    std::size_t produced = Stream::kOutBytes - z.avail_out;
    if (produced > 0) next_->write(reinterpret_cast<const char*>(stream_->out.get()), produced);
  } while (z.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
}

void GzipOutput::write(const char* data, std::size_t size) {
  z_stream& z = stream_->z;
  while (size > 0) {
    // avail_in is 32-bit: feed very large writes in pieces.
    auto piece = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z.avail_in = piece;
    pump(Z_NO_FLUSH);
    data += piece;
    size -= piece;
  }
}

void GzipOutput::commit() {
  stream_->z.avail_in = 0;
  pump(Z_FINISH);
  next_->commit();
}

}  // namespace kinetrace::detail
