#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "analysis/read_budget.h"

// Lists of records that `kinetrace analyze` keeps in bounded memory: a list holds up to
// its buffer's worth of records in memory and writes the rest to a temporary file, so a
// trace of any length is analysed in the memory its configuration allows (a few lists of
// `maxBytes` each), not in memory that grows with its events.
//
//   SpilledList<T>        records read back in the order they were added
//   ExternalSorter<T, L>  records read back sorted by L: each full buffer is sorted and
//                         written as a run; reading merges the runs. Not stable: a record
//                         that needs a stable order carries its sequence number in its key.
//
// A buffer's bytes, and those of the buffers that read a file back, come from the read
// budget (read_budget.h) as the buffer grows: when the budget says no, the list writes to its
// file earlier instead, so the lists, the names and the metadata together stay within the
// cap. A list that cannot get even a small buffer throws the budget's error, naming `what`.
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

// A list's buffer starts this small and doubles up to its most: a list that stays short
// takes little of the budget.
constexpr std::size_t kFirstListBytes = std::size_t{4} << 10;

// How many records of `bytes` a buffer of `bufferBytes` holds (at least one).
template <typename T>
std::size_t itemsIn(std::size_t bufferBytes) {
  return std::max<std::size_t>(1, bufferBytes / sizeof(T));
}

// Room for `wanted` records, or as many fewer (halving, down to one) as the budget gives;
// one it cannot give throws the budget's error naming `what`.
template <typename T>
void reserveWhatTheBudgetGives(BudgetBuffer<T>& buffer, std::size_t wanted, const char* what) {
  for (std::size_t items = std::max<std::size_t>(wanted, 1);; items /= 2) {
    if (buffer.tryReserve(items)) return;
    if (items == 1) buffer.budget().refuse(what);
  }
}

// Records read from a file a buffer at a time: a run of an ExternalSorter, or a
// SpilledList's spilled part.
template <typename T>
class SpillReader {
 public:
  SpillReader(const SpillFile* file, uint64_t offset, uint64_t count, std::size_t bufferItems,
              ReadBudget& budget, const char* what)
      : file_(file), offset_(offset), left_(count), buffer_(budget) {
    reserveWhatTheBudgetGives(
        buffer_, std::min<uint64_t>(std::max<std::size_t>(1, bufferItems), count), what);
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
    filled_ = static_cast<std::size_t>(std::min<uint64_t>(left_, buffer_.capacity()));
    if (filled_ == 0) return;
    file_->read(offset_, buffer_.data(), filled_ * sizeof(T));
    offset_ += filled_ * sizeof(T);
    left_ -= filled_;
  }
  const SpillFile* file_;
  uint64_t offset_;
  uint64_t left_;
  BudgetBuffer<T> buffer_;
  std::size_t at_ = 0;
  std::size_t filled_ = 0;
};

// The memory part of a list: grows from kFirstListBytes up to its most while the budget
// gives; add() says when it is full, for its owner to write it out.
template <typename T>
class ListBuffer {
 public:
  ListBuffer(ReadBudget& budget, const char* what, std::size_t maxBytes)
      : buffer_(budget), what_(what), maxItems_(itemsIn<T>(maxBytes)) {}

  // Whether `item` was added; false when the buffer is full and the budget gives no more
  // (never when it is empty: one that cannot get a first record's room throws).
  bool tryAdd(const T& item) {
    if (buffer_.size() == buffer_.capacity()) {
      const std::size_t grown =
          std::min(maxItems_, std::max(buffer_.capacity() * 2, itemsIn<T>(kFirstListBytes)));
      if (grown == buffer_.capacity() || !buffer_.tryReserve(grown)) {
        if (!buffer_.empty()) return false;
        reserveWhatTheBudgetGives(buffer_, grown, what_);
      }
    }
    buffer_.push(item);
    return true;
  }
  // Adds `item`, calling writeOut() first when the buffer is full (it must leave the buffer
  // empty), and counts it.
  template <typename WriteOut>
  void add(const T& item, WriteOut&& writeOut) {
    if (!tryAdd(item)) {
      writeOut();
      tryAdd(item);
    }
    ++added_;
  }
  // Items add() took, written out or not.
  uint64_t added() const { return added_; }
  BudgetBuffer<T>& items() { return buffer_; }
  const BudgetBuffer<T>& items() const { return buffer_; }
  ReadBudget& budget() const { return buffer_.budget(); }
  const char* what() const { return what_; }
  std::size_t maxItems() const { return maxItems_; }

 private:
  BudgetBuffer<T> buffer_;
  const char* what_;
  std::size_t maxItems_;
  uint64_t added_ = 0;
};

template <typename T>
class SpilledList {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to a file as bytes");

 public:
  // `what` names the list in the budget's errors; `maxBytes`: the most it keeps in memory.
  SpilledList(ReadBudget& budget, const char* what, std::size_t maxBytes)
      : memory_(budget, what, maxBytes) {}

  void add(const T& item) {
    memory_.add(item, [this] { spill(); });
  }
  uint64_t size() const { return memory_.added(); }

  // Calls visit(record) for each record, in the order they were added. Can be repeated.
  template <typename Visit>
  void forEach(Visit&& visit) const {
    if (file_) {
      SpillReader<T> reader(file_.get(), 0, spilled_, memory_.items().capacity(), memory_.budget(),
                            memory_.what());
      for (; !reader.empty(); reader.pop()) visit(reader.front());
    }
    for (const T& item : memory_.items()) visit(item);
  }

 private:
  void spill() {
    BudgetBuffer<T>& items = memory_.items();
    if (!file_) file_ = std::make_unique<SpillFile>();
    file_->append(items.data(), items.size() * sizeof(T));
    spilled_ += items.size();
    items.clear();
  }
  ListBuffer<T> memory_;
  std::unique_ptr<SpillFile> file_;
  uint64_t spilled_ = 0;
};

template <typename T, typename Less>
class ExternalSorter {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to a file as bytes");

 public:
  // `what` names the list in the budget's errors; `maxBytes`: the most it keeps in memory.
  ExternalSorter(ReadBudget& budget, const char* what, std::size_t maxBytes, Less less = Less())
      : memory_(budget, what, maxBytes),
        less_(less),
        runs_(BudgetAllocator<Run>(budget, what)),
        readers_(BudgetAllocator<SpillReader<T>>(budget, what)),
        heap_(BudgetAllocator<std::size_t>(budget, what)) {}

  void add(const T& item) {
    memory_.add(item, [this] { spillRun(); });
  }
  uint64_t size() const { return memory_.added(); }
  // Runs written to the file so far (0: all in memory).
  std::size_t spilledRuns() const { return runs_.size(); }

  // Sorts what was added, for reading once: front() and pop() until done(), or drain().
  // Nothing can be added after.
  void sort() {
    BudgetBuffer<T>& buffer = memory_.items();
    std::sort(buffer.begin(), buffer.end(), less_);
    if (runs_.empty()) return;  // all in memory: read from the buffer directly
    // The last run goes to the file too, and its room to the buffers that read the runs
    // back a part at a time: a list holds at most its buffer's bytes, written or read.
    const std::size_t bufferItems = std::max(buffer.capacity(), std::size_t{1});
    if (!buffer.empty()) spillRun();
    buffer.release();
    readers_.reserve(runs_.size());
    const std::size_t readItems = std::max<std::size_t>(1, bufferItems / runs_.size());
    for (const Run& run : runs_) {
      readers_.emplace_back(file_.get(), run.offset, run.count, readItems, memory_.budget(),
                            memory_.what());
    }
    for (std::size_t source = 0; source < readers_.size(); ++source) {
      if (!readers_[source].empty()) heap_.push_back(source);
    }
    std::make_heap(heap_.begin(), heap_.end(), Later{this});
  }
  bool done() const { return runs_.empty() ? memoryAt_ == memory_.items().size() : heap_.empty(); }
  const T& front() const {
    return runs_.empty() ? memory_.items()[memoryAt_] : readers_[heap_.front()].front();
  }
  void pop() {
    if (runs_.empty()) {
      if (++memoryAt_ == memory_.items().size()) release();
      return;
    }
    // A k-way merge: the run whose front is least next, the earlier run first among equals.
    std::pop_heap(heap_.begin(), heap_.end(), Later{this});
    const std::size_t source = heap_.back();
    readers_[source].pop();
    if (!readers_[source].empty()) {
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
    BudgetBuffer<T>& buffer = memory_.items();
    std::sort(buffer.begin(), buffer.end(), less_);
    if (!file_) file_ = std::make_unique<SpillFile>();
    runs_.push_back({file_->append(buffer.data(), buffer.size() * sizeof(T)), buffer.size()});
    buffer.clear();
  }
  // Orders the heap of sources: a max-heap of "later", so the least front is on top.
  struct Later {
    const ExternalSorter* sorter;
    bool operator()(std::size_t a, std::size_t b) const {
      const T& x = sorter->readers_[a].front();
      const T& y = sorter->readers_[b].front();
      if (sorter->less_(y, x)) return true;
      if (sorter->less_(x, y)) return false;
      return a > b;
    }
  };
  // Once read, the memory and the file go.
  void release() {
    memory_.items().release();
    BudgetVector<Run>(runs_.get_allocator()).swap(runs_);
    memoryAt_ = 0;
    BudgetVector<SpillReader<T>>(readers_.get_allocator()).swap(readers_);
    BudgetVector<std::size_t>(heap_.get_allocator()).swap(heap_);
    file_.reset();
  }

  ListBuffer<T> memory_;
  Less less_;
  BudgetVector<Run> runs_;  // of a list that spills: what its file holds
  std::unique_ptr<SpillFile> file_;
  // While reading:
  std::size_t memoryAt_ = 0;  // the next record of the buffer
  BudgetVector<SpillReader<T>> readers_;
  BudgetVector<std::size_t> heap_;
};

}  // namespace kinetrace::detail
