#pragma once

#include <memory>

#include "output/atomic_file.h"

namespace kinetrace::detail {

// Compresses everything written into gzip format (RFC 1952) and passes it on to another
// output. Traces reach gigabytes and compress about tenfold; Perfetto, TensorBoard and
// HTA read ".json.gz" directly.
class GzipOutput final : public ByteOutput {
 public:
  explicit GzipOutput(std::unique_ptr<ByteOutput> next);
  ~GzipOutput() override;
  GzipOutput(const GzipOutput&) = delete;
  GzipOutput& operator=(const GzipOutput&) = delete;

  void write(const char* data, std::size_t size) override;
  // Finishes the gzip stream, then commits the output below.
  void commit() override;

 private:
  struct Stream;
  void pump(int flush);

  std::unique_ptr<ByteOutput> next_;
  std::unique_ptr<Stream> stream_;
};

// Whether this build can write gzip (zlib was found).
bool gzipAvailable();

}  // namespace kinetrace::detail
