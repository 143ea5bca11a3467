#pragma once

// A trace file's bytes as a std::streambuf for nlohmann_json's stream input (the Chrome
// trace reader's SAX parse), keeping the parser's own memory within the read budget.
// nlohmann's lexer keeps every byte it reads between two strings or numbers (for its error
// messages), whitespace included: long runs of whitespace outside strings are cut short
// here. A string or number (a token) is held by the lexer twice, in buffers it clears but
// never shrinks: the budget is asked for the longest token's room before the lexer holds
// it, and one too long for it is refused naming it. Since bytes are dropped, the buffer
// also maps the parser's positions back to offsets in the file, for messages.
//
// Separate from the reader: it knows JSON's lexical structure (strings, escapes, tokens)
// but nothing of a trace's.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <streambuf>

#include "analysis/json_structure.h"
#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"

namespace kinetrace::detail {

class JsonSourceBuffer : public std::streambuf {
 public:
  // Reads `source` from where it is (whitespace before the trace was read while telling the
  // format), calling `progress` after each read. Takes its buffers from `budget`.
  JsonSourceBuffer(ByteSource& source, const ReadProgress& progress, ReadBudget& budget);

  // Whether the whole file has been read, and how many bytes were handed to the parser.
  bool atEnd() const { return atEnd_; }
  uint64_t delivered() const { return delivered_; }

  // The offset in the (decompressed) file of the byte the parser counts as `position`.
  uint64_t fileOffsetOf(uint64_t position) const;
  // The offset in the file of the next byte the parser will take.
  uint64_t fileOffsetNow() const {
    return fileOffsetOf(bufferStart_ + static_cast<uint64_t>(gptr() - eback()));
  }

 protected:
  int_type underflow() override;

 private:
  struct Anchor {
    std::size_t filtered;  // index in buffer_
    uint64_t raw;          // offset in the file
  };

  static BudgetHold takeBuffers(ReadBudget& budget);
  void noteTokenByte();
  std::size_t filter(std::size_t size);

  // Not zeroed: zeroing a fresh megabyte is 256 page faults, half of those of converting a
  // small trace.
  static constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
  // Whitespace of one run passed on as it is: byte offsets in messages stay exact for any
  // indentation, and the lexer keeps no more than this of a run.
  static constexpr std::size_t kKeptWhitespace = 256;
  static constexpr std::size_t kTokenStepBytes = std::size_t{64} << 10;

  ByteSource& source_;
  const ReadProgress& progress_;
  ReadBudget& budget_;
  BudgetHold buffersHold_;
  BudgetHold tokenHold_;  // the lexer's buffers: four times the longest token so far
  std::unique_ptr<char[]> raw_;
  std::unique_ptr<char[]> buffer_;
  BudgetVector<Anchor> anchors_;  // of buffer_: where its bytes were in the file
  uint64_t rawOffset_;            // file bytes filtered so far
  uint64_t bufferStart_ = 0;      // of buffer_, among the bytes delivered
  uint64_t droppedBefore_ = 0;    // whitespace dropped before buffer_
  uint64_t delivered_ = 0;
  uint64_t tokenBytes_ = 0;  // of the string or number being read
  uint64_t tokenStart_ = 0;
  std::size_t whitespaceRun_ = 0;
  JsonStringScan strings_;
  bool inToken_ = false;  // a number or literal
  bool atEnd_ = false;
};

}  // namespace kinetrace::detail
