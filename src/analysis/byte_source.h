#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// Reading a trace file as a stream of bytes, decompressing gzip on the way when the file
// is gzip (by its magic bytes, whatever its name), so readers see one kind of input and
// never hold a whole file in memory.

namespace kinetrace::detail {

class ByteSource {
 public:
  // Opens the file; throws kinetrace::Error naming the path and the reason.
  explicit ByteSource(std::string path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Up to `size` bytes of content (decompressed); 0 at the end. Throws kinetrace::Error on
  // a read error or corrupt or truncated gzip data, naming the file.
  std::size_t read(char* data, std::size_t size);

  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }
  // Progress: bytes of the file consumed so far, and the file's size.
  uint64_t consumedBytes() const;
  uint64_t fileBytes() const { return fileBytes_; }

 private:
  struct Gzip;
  std::string path_;
  int fd_ = -1;
  uint64_t fileBytes_ = 0;
  uint64_t rawConsumed_ = 0;
  bool compressed_ = false;
  Gzip* gzip_ = nullptr;
};

}  // namespace kinetrace::detail
