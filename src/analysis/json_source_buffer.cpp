#include "analysis/json_source_buffer.h"

#include <fmt/format.h>

#include "analysis/byte_source.h"

namespace kinetrace::detail {
namespace {

constexpr const char* kReaderBuffers = "the JSON reader's buffers";

}  // namespace

JsonSourceBuffer::JsonSourceBuffer(ByteSource& source, const ReadProgress& progress,
                                   ReadBudget& budget)
    : source_(source),
      progress_(progress),
      budget_(budget),
      buffersHold_(takeBuffers(budget)),
      tokenHold_(budget),
      raw_(new char[kBufferBytes]),
      buffer_(new char[kBufferBytes]),
      anchors_(BudgetAllocator<Anchor>(budget, kReaderBuffers)),
      rawOffset_(source.contentOffset()) {}

uint64_t JsonSourceBuffer::fileOffsetOf(uint64_t position) const {
  if (anchors_.empty() || position < bufferStart_) return position + droppedBefore_;
  const std::size_t k = static_cast<std::size_t>(position - bufferStart_);
  const Anchor* at = &anchors_.front();
  for (const Anchor& anchor : anchors_) {
    if (anchor.filtered > k) break;
    at = &anchor;
  }
  return at->raw + (k - at->filtered);
}

JsonSourceBuffer::int_type JsonSourceBuffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  bufferStart_ = delivered_;
  droppedBefore_ = rawOffset_ - delivered_;
  while (true) {
    const std::size_t got = source_.read(raw_.get(), kBufferBytes);
    if (progress_) progress_(source_.consumedBytes(), source_.fileBytes());
    if (got == 0) {
      atEnd_ = true;
      anchors_.clear();
      return traits_type::eof();
    }
    const std::size_t kept = filter(got);
    if (kept == 0) continue;  // all of it whitespace let go
    delivered_ += kept;
    setg(buffer_.get(), buffer_.get(), buffer_.get() + kept);
    return traits_type::to_int_type(buffer_[0]);
  }
}

BudgetHold JsonSourceBuffer::takeBuffers(ReadBudget& budget) {
  BudgetHold hold(budget);
  hold.take(2 * (kBufferBytes + kAllocationOverheadBytes), kReaderBuffers);
  return hold;
}

// The lexer's two buffers double as they grow, so each may have twice the room of the
// longest token: four times its bytes, asked for in steps so the budget is not asked per
// byte.
void JsonSourceBuffer::noteTokenByte() {
  ++tokenBytes_;
  if (tokenBytes_ * 4 <= tokenHold_.bytes()) return;
  const std::size_t wanted = static_cast<std::size_t>(tokenBytes_) * 4 + kTokenStepBytes;
  if (!tokenHold_.tryTake(wanted - tokenHold_.bytes())) {
    budget_.refuse(
        fmt::format("the {} at byte {}, {} bytes long so far (the JSON parser "
                    "holds it four times over),",
                    strings_.inString ? "string" : "number", tokenStart_, tokenBytes_));
  }
}

// Copies raw_[0, size) to buffer_, dropping whitespace beyond kKeptWhitespace bytes of
// one run outside strings; returns the bytes kept.
std::size_t JsonSourceBuffer::filter(std::size_t size) {
  anchors_.clear();
  bool anchorDue = true;
  std::size_t out = 0;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = raw_[i];
    if (strings_.inString) {
      noteTokenByte();
      strings_.stepInString(c);
      whitespaceRun_ = 0;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      inToken_ = false;
      if (++whitespaceRun_ > kKeptWhitespace) {
        anchorDue = true;
        continue;
      }
    } else {
      whitespaceRun_ = 0;
      if (c == '"') {
        strings_.inString = true;
        inToken_ = false;
        tokenBytes_ = 0;
        tokenStart_ = rawOffset_ + i;
      } else if (c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}') {
        inToken_ = false;
      } else {
        // A number (or a literal): the lexer holds it as it holds a string.
        if (!inToken_) {
          inToken_ = true;
          tokenBytes_ = 0;
          tokenStart_ = rawOffset_ + i;
        }
        noteTokenByte();
      }
    }
    if (anchorDue) {
      anchors_.push_back({out, rawOffset_ + i});
      anchorDue = false;
    }
    buffer_[out++] = c;
  }
  rawOffset_ += size;
  return out;
}

}  // namespace kinetrace::detail
