#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// Reading a trace file as a stream of bytes, decompressing gzip on the way when the file
// is gzip (by its magic bytes, whatever its name), so readers see one kind of input and
// never hold a whole file in memory. The file is opened once and read once from its start
// to its end, never reopened nor read at an offset: a pipe, a FIFO or /dev/stdin reads as
// a file does.
//
// Memory: a megabyte of compressed input and zlib's own state (about 45 KB) for gzip, taken
// from the read budget while the source is open; an uncompressed file takes none.

namespace kinetrace::detail {

class ReadBudget;

class ByteSource {
 public:
  // Opens the file; throws kinetrace::Error naming the path and the reason, or the budget
  // when it cannot hold gzip's buffers. The budget outlives the source.
  ByteSource(std::string path, ReadBudget& budget);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Up to `size` bytes of content (decompressed); 0 at the end. Throws kinetrace::Error on
  // a read error or corrupt or truncated gzip data, naming the file.
  std::size_t read(char* data, std::size_t size);

  // The next content bytes, up to `size` of them (fewer at the end), without consuming
  // them: the next read() returns them first. For telling formats apart.
  std::string_view peek(std::size_t size);

  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }
  // Progress: bytes of the file consumed so far, and the file's size (0 when unknown: a
  // pipe).
  uint64_t consumedBytes() const;
  uint64_t fileBytes() const { return fileBytes_; }
  // Content bytes read() has returned so far: the offset of the next one.
  uint64_t contentOffset() const { return contentRead_; }

 private:
  struct Gzip;
  std::size_t readRaw(unsigned char* data, std::size_t size);
  std::size_t readContent(char* data, std::size_t size);
  std::string path_;
  ReadBudget& budget_;
  int fd_ = -1;
  uint64_t fileBytes_ = 0;
  uint64_t rawConsumed_ = 0;
  uint64_t contentRead_ = 0;
  bool compressed_ = false;
  Gzip* gzip_ = nullptr;
  std::string rawHead_;    // raw bytes read to recognise gzip, not yet consumed
  std::string lookahead_;  // content bytes peek() returned, not yet read
};

}  // namespace kinetrace::detail
