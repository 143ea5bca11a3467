#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Lists of records that `kinetrace analyze` keeps in bounded memory: a list holds up to
// its buffer's worth of records in memory and writes the rest to a temporary file, so a
// trace of any length is analysed in the memory its configuration allows (a few lists of
// `bufferBytes` each), not in memory that grows with its events.
//
//   SpilledList<T>        records read back in the order they were added
//   ExternalSorter<T, L>  records read back sorted by L: each full buffer is sorted and
//                         written as a run; reading merges the runs (the last one stays in
//                         memory). Not stable: a record that needs a stable order carries
//                         its sequence number in its key.
//
// A list that never fills its buffer touches no file. Records are trivially copyable.

namespace kinetrace::detail {

// An unnamed temporary file (removed as soon as it is made), in $TMPDIR or /tmp: appended
// to, and read back at any offset. Errors (a full disk) throw, naming the directory.
class SpillFile {
 public:
  SpillFile();
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends the bytes; returns the offset they start at.
  uint64_t append(const void* data, std::size_t size);
  void read(uint64_t offset, void* data, std::size_t size) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string directory_;
};

// Records read from a file a buffer at a time: a run of an ExternalSorter, or a
// SpilledList's spilled part.
template <typename T>
class SpillReader {
 public:
  SpillReader(const SpillFile* file, uint64_t offset, uint64_t count, std::size_t bufferItems)
      : file_(file), offset_(offset), left_(count), buffer_(std::max<std::size_t>(1, bufferItems)) {
    refill();
  }
  bool empty() const { return at_ == filled_; }
  const T& front() const { return buffer_[at_]; }
  void pop() {
    if (++at_ == filled_) refill();
  }

 private:
  void refill() {
    at_ = 0;
    filled_ = static_cast<std::size_t>(std::min<uint64_t>(left_, buffer_.size()));
    if (filled_ == 0) return;
    file_->read(offset_, buffer_.data(), filled_ * sizeof(T));
    offset_ += filled_ * sizeof(T);
    left_ -= filled_;
  }
  const SpillFile* file_;
  uint64_t offset_;
  uint64_t left_;
  std::vector<T> buffer_;
  std::size_t at_ = 0;
  std::size_t filled_ = 0;
};

// How many records of `bytes` a buffer of `bufferBytes` holds (at least one).
template <typename T>
std::size_t itemsIn(std::size_t bufferBytes) {
  return std::max<std::size_t>(1, bufferBytes / sizeof(T));
}

template <typename T>
class SpilledList {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to a file as bytes");

 public:
  explicit SpilledList(std::size_t bufferBytes) : capacity_(itemsIn<T>(bufferBytes)) {}

  void add(const T& item) {
    if (memory_.size() == capacity_) spill();
    memory_.push_back(item);
    ++size_;
  }
  uint64_t size() const { return size_; }

  // Calls visit(record) for each record, in the order they were added. Can be repeated.
  template <typename Visit>
  void forEach(Visit&& visit) const {
    if (file_) {
      SpillReader<T> reader(file_.get(), 0, spilled_, capacity_);
      for (; !reader.empty(); reader.pop()) visit(reader.front());
    }
    for (const T& item : memory_) visit(item);
  }

 private:
  void spill() {
    if (!file_) file_ = std::make_unique<SpillFile>();
    file_->append(memory_.data(), memory_.size() * sizeof(T));
    spilled_ += memory_.size();
    memory_.clear();
  }
  std::size_t capacity_;
  std::vector<T> memory_;
  std::unique_ptr<SpillFile> file_;
  uint64_t spilled_ = 0;
  uint64_t size_ = 0;
};

template <typename T, typename Less>
class ExternalSorter {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to a file as bytes");

 public:
  explicit ExternalSorter(std::size_t bufferBytes, Less less = Less())
      : capacity_(itemsIn<T>(bufferBytes)), less_(less) {}

  void add(const T& item) {
    if (buffer_.size() == capacity_) spillRun();
    buffer_.push_back(item);
    ++size_;
  }
  uint64_t size() const { return size_; }
  // Runs written to the file so far (0: all in memory).
  std::size_t spilledRuns() const { return runs_.size(); }

  // Sorts what was added, for reading once: front() and pop() until done(), or drain().
  // Nothing can be added after.
  void sort() {
    std::sort(buffer_.begin(), buffer_.end(), less_);
    if (runs_.empty()) return;  // all in memory: read from buffer_ directly
    // The runs are read a buffer at a time, the buffers together no larger than the last
    // run, which stays in memory: a list holds at most twice its buffer's bytes.
    readers_.reserve(runs_.size());
    const std::size_t readItems = std::max<std::size_t>(1, capacity_ / (runs_.size() + 1));
    for (const Run& run : runs_) {
      readers_.emplace_back(file_.get(), run.offset, run.count, readItems);
    }
    for (std::size_t source = 0; source < readers_.size(); ++source) {
      if (!readers_[source].empty()) heap_.push_back(source);
    }
    if (!buffer_.empty()) heap_.push_back(memoryRun());
    std::make_heap(heap_.begin(), heap_.end(), Later{this});
  }
  bool done() const { return runs_.empty() ? memoryAt_ == buffer_.size() : heap_.empty(); }
  const T& front() const { return runs_.empty() ? buffer_[memoryAt_] : frontOf(heap_.front()); }
  void pop() {
    if (runs_.empty()) {
      if (++memoryAt_ == buffer_.size()) release();
      return;
    }
    // A k-way merge: the run whose front is least next, the in-memory run (the last
    // source) last among equals.
    std::pop_heap(heap_.begin(), heap_.end(), Later{this});
    const std::size_t source = heap_.back();
    bool more;
    if (source == memoryRun()) {
      more = ++memoryAt_ < buffer_.size();
    } else {
      readers_[source].pop();
      more = !readers_[source].empty();
    }
    if (more) {
      std::push_heap(heap_.begin(), heap_.end(), Later{this});
    } else {
      heap_.pop_back();
      if (heap_.empty()) release();
    }
  }
  // sort(), then visit(record) for each record in order.
  template <typename Visit>
  void drain(Visit&& visit) {
    sort();
    for (; !done(); pop()) visit(front());
  }

 private:
  struct Run {
    uint64_t offset = 0;
    uint64_t count = 0;
  };

  void spillRun() {
    std::sort(buffer_.begin(), buffer_.end(), less_);
    if (!file_) file_ = std::make_unique<SpillFile>();
    runs_.push_back({file_->append(buffer_.data(), buffer_.size() * sizeof(T)), buffer_.size()});
    buffer_.clear();
  }
  std::size_t memoryRun() const { return readers_.size(); }
  const T& frontOf(std::size_t source) const {
    return source == memoryRun() ? buffer_[memoryAt_] : readers_[source].front();
  }
  // Orders the heap of sources: a max-heap of "later", so the least front is on top.
  struct Later {
    const ExternalSorter* sorter;
    bool operator()(std::size_t a, std::size_t b) const {
      const T& x = sorter->frontOf(a);
      const T& y = sorter->frontOf(b);
      if (sorter->less_(y, x)) return true;
      if (sorter->less_(x, y)) return false;
      return a > b;
    }
  };
  // Once read, the memory and the file go.
  void release() {
    std::vector<T>().swap(buffer_);
    memoryAt_ = 0;
    readers_.clear();
    heap_.clear();
    file_.reset();
  }

  std::size_t capacity_;
  Less less_;
  std::vector<T> buffer_;
  std::vector<Run> runs_;
  std::unique_ptr<SpillFile> file_;
  uint64_t size_ = 0;
  // While reading:
  std::size_t memoryAt_ = 0;  // the next record of buffer_
  std::vector<SpillReader<T>> readers_;
  std::vector<std::size_t> heap_;
};

}  // namespace kinetrace::detail
