// Linked instead of gzip_output.cpp when kinetrace is built without zlib.

#include "kinetrace/error.h"
#include "output/gzip_output.h"

namespace kinetrace::detail {

struct GzipOutput::Stream {};

bool gzipAvailable() { return false; }

GzipOutput::GzipOutput(std::unique_ptr<ByteOutput> next) : next_(std::move(next)) {
  throw Error("this build cannot write .gz traces (built without zlib)");
}
GzipOutput::~GzipOutput() = default;
void GzipOutput::write(const char*, std::size_t) {}
void GzipOutput::commit() {}
void GzipOutput::pump(int) {}

}  // namespace kinetrace::detail
