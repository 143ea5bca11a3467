// `kinetrace convert`: its command line, and conversions between files: every format to
// every other and back gives the same events; bad input is an error and leaves no output.

#include "convert_command.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "analysis/trace_reader.h"
#include "cli_options.h"
#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/trace_events.h"
#include "support/sample_trace.h"
#include "support/temp_dir.h"
#include "support/test_support.h"
#include "support/usage_error.h"

namespace kinetrace::cli {
namespace {

using kinetrace::testing::usageErrorOf;

TEST(ConvertOptionsTest, TakesAnInputAndAnOutput) {
  Command command = parseCommandLine({"convert", "in.json", "out.pftrace"});
  EXPECT_EQ(command.kind, Command::Kind::Convert);
  EXPECT_EQ(command.convert.input, "in.json");
  EXPECT_EQ(command.convert.output, "out.pftrace");
  EXPECT_FALSE(command.convert.quiet);
  EXPECT_TRUE(parseCommandLine({"convert", "-q", "a", "b.json"}).convert.quiet);
  EXPECT_EQ(parseCommandLine({"convert", "--", "-odd name", "b.json"}).convert.input, "-odd name");
  EXPECT_EQ(parseCommandLine({"convert", "--help"}).helpTopic, "convert");
  EXPECT_EQ(parseCommandLine({"help", "convert"}).helpTopic, "convert");
}

TEST(ConvertOptionsTest, AnythingButTwoPathsIsAUsageError) {
  EXPECT_EQ(usageErrorOf({"convert", "in.json"}),
            "kinetrace convert: give an input and an output trace: kinetrace convert IN OUT "
            "(got 1 paths)");
  EXPECT_NE(usageErrorOf({"convert", "a", "b", "c"}).find("(got 3 paths)"), std::string::npos);
  EXPECT_NE(usageErrorOf({"convert", "--zip", "a", "b.json"}).find("unknown option '--zip'"),
            std::string::npos);
}

TEST(ConvertOptionsTest, DashIsStandardInput) {
  EXPECT_EQ(parseCommandLine({"convert", "-", "out.json"}).convert.input, "/dev/stdin");
  EXPECT_EQ(parseCommandLine({"convert", "./-", "out.json"}).convert.input, "./-");
  EXPECT_EQ(parseCommandLine({"analyze", "a.json", "-"}).analyze.paths,
            (std::vector<std::string>{"a.json", "/dev/stdin"}));
}

TEST(ConvertOptionsTest, AnOutputWhoseNameChoosesNoFormatIsAUsageError) {
  EXPECT_EQ(usageErrorOf({"convert", "in.json", "out.txt"}),
            "kinetrace convert: out.txt: OUT's name chooses its format, and this one names none: "
            "end it in .json, .json.gz or .pftrace (or .perfetto-trace, .pftrace.gz), or give - "
            "for JSON on standard output");
  EXPECT_NE(usageErrorOf({"convert", "in.json", "trace"}), "") << "no extension at all";
  for (const char* out : {"a.json", "a.json.gz", "a.pftrace", "a.perfetto-trace", "a.pftrace.gz",
                          "file:///tmp/a.json", "perfetto:///tmp/a", "myscheme://anything"}) {
    EXPECT_EQ(parseCommandLine({"convert", "in.json", out}).convert.output, out) << out;
  }
}

class ConvertCommandTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  int convert(const std::string& in, const std::string& out,
              uint64_t progressFromBytes = ~uint64_t{0}, std::size_t memoryBytes = 0,
              bool quiet = false) {
    ConvertOptions options;
    options.input = path(in);
    options.output = path(out);
    options.progressFromBytes = progressFromBytes;
    if (memoryBytes != 0) options.memoryBytes = memoryBytes;
    options.quiet = quiet;
    std::FILE* messages = std::tmpfile();
    const int status = convertCommand(options, stdout, messages);
    std::rewind(messages);
    char line[512];
    report_.clear();
    while (std::fgets(line, sizeof line, messages) != nullptr) report_ += line;
    std::fclose(messages);
    return status;
  }

  std::vector<std::string> events(const std::string& name) {
    MemorySink sink;
    detail::readTraceFile(path(name), sink, "x", budget);
    std::vector<std::string> lines;
    for (const OwnedEvent& e : sink.events()) {
      std::string line = std::string(1, static_cast<char>(e.phase)) + " " + e.name + " " +
                         e.category + " " + std::to_string(e.pid) + " " + std::to_string(e.tid) +
                         " " + std::to_string(e.timestampNs) + " " + std::to_string(e.durationNs) +
                         " " + std::to_string(e.flowId) + " args:" + std::to_string(e.args.size());
      lines.push_back(line);
    }
    return lines;
  }

  testing::TempDir dir_;
  std::string report_;
  detail::ReadBudget budget;
};

TEST_F(ConvertCommandTest, EveryFormatConvertsToEveryOtherWithTheSameEvents) {
  {
    std::unique_ptr<Sink> sink = openSink(path("start.json"));
    detail::writeTrace(test::sampleTrace(), "start.json", {}, *sink);
  }
  const std::vector<std::string> original = events("start.json");
  ASSERT_FALSE(original.empty());
  const char* chain[] = {"start.json",   "a.pftrace", "b.json.gz",
                         "c.pftrace.gz", "d.json",    "e.pftrace"};
  for (std::size_t i = 1; i < std::size(chain); ++i) {
    ASSERT_EQ(convert(chain[i - 1], chain[i]), 0);
    EXPECT_EQ(events(chain[i]), original) << chain[i - 1] << " -> " << chain[i];
    const std::string count = std::to_string(original.size());
    EXPECT_NE(report_.find("kinetrace: wrote " + path(chain[i]) + ": " + count + " of " + count +
                           " events"),
              std::string::npos)
        << report_;
  }
  EXPECT_EQ(detail::detectTraceFormat(path("e.pftrace"), budget),
            detail::TraceFileFormat::Perfetto);
  // Through every format and back, the trace keeps the name it was recorded under.
  MemorySink last;
  detail::readTraceFile(path("e.pftrace"), last, "reader's default", budget);
  const Value* traceName = last.metadata("traceName");  // written after the events: the footer's
  ASSERT_NE(traceName, nullptr);
  EXPECT_EQ(*traceName, Value("start.json"));
}

// torch.profiler and kinetrace write traceName after the events: it comes through a JSON and
// a .pftrace to the last JSON, not replaced by each output's path.
TEST_F(ConvertCommandTest, TheRoundTripKeepsTheTracesNameWrittenAfterItsEvents) {
  std::ofstream(path("run.json")) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1, "dur": 2}],
    "traceName": "/data/run_1234.pt.trace.json"})";
  ASSERT_EQ(convert("run.json", "run.pftrace"), 0);
  ASSERT_EQ(convert("run.pftrace", "back.json"), 0);
  ASSERT_EQ(convert("run.json", "copy.json.gz"), 0);
  for (const char* name : {"back.json", "copy.json.gz"}) {
    MemorySink read;
    detail::readTraceFile(path(name), read, "reader's default", budget);
    const Value* traceName = read.metadata("traceName");
    ASSERT_NE(traceName, nullptr) << name;
    EXPECT_EQ(*traceName, Value("/data/run_1234.pt.trace.json")) << name;
  }
  const nlohmann::json back = nlohmann::json::parse(std::ifstream(path("back.json")));
  EXPECT_EQ(back["traceName"], "/data/run_1234.pt.trace.json");
}

TEST_F(ConvertCommandTest, DashWritesJsonToStandardOutput) {
  std::ofstream(path("in.json")) << R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
  EXPECT_EQ(parseCommandLine({"convert", "in.json", "-"}).convert.output, "-");
  ConvertOptions options;
  options.input = path("in.json");
  options.output = "-";
  // Standard output is the test's own: the bytes go to a file put in its place.
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int file = ::open(path("stdout.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(file, 0);
  ::dup2(file, STDOUT_FILENO);
  ::close(file);
  std::FILE* messages = std::tmpfile();
  const int status = convertCommand(options, stdout, messages);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ASSERT_EQ(status, 0);
  const nlohmann::json written = nlohmann::json::parse(std::ifstream(path("stdout.json")));
  ASSERT_EQ(written["traceEvents"].size(), 1u);
  EXPECT_EQ(written["traceEvents"][0]["name"], "gemm");
  std::rewind(messages);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof line, messages), nullptr);
  EXPECT_EQ(std::string(line).rfind("kinetrace: wrote standard output: 1 of 1 events", 0), 0u)
      << line;
}

TEST_F(ConvertCommandTest, LargeInputsShowTheirProgress) {
  {
    std::unique_ptr<Sink> sink = openSink(path("in.json"));
    detail::writeTrace(test::sampleTrace(), "in.json", {}, *sink);
  }
  ASSERT_EQ(convert("in.json", "out.pftrace", /*progressFromBytes=*/0), 0);
  // Not a terminal: a line at each tenth reached (one read takes this small file whole).
  EXPECT_NE(report_.find("reading " + path("in.json") + ": 100% ("), std::string::npos) << report_;
  ASSERT_EQ(convert("in.json", "again.pftrace"), 0);
  EXPECT_EQ(report_.find("reading "), std::string::npos) << "small inputs show none: " << report_;
}

TEST(ConvertOptionsTest, TakesMemoryMbAsAnalyzeDoes) {
  EXPECT_EQ(parseCommandLine({"convert", "--memory-mb", "32", "a", "b.json"}).convert.memoryBytes,
            std::size_t{32} << 20);
  EXPECT_EQ(parseCommandLine({"convert", "a", "b.json"}).convert.memoryBytes, std::size_t{256} << 20);
  EXPECT_EQ(usageErrorOf({"convert", "--memory-mb", "15", "a", "b.json"}),
            "kinetrace convert: --memory-mb needs a whole number of megabytes 16..1048576, got "
            "'15'");
}

// Every event of IN is written or said, with why: the reader's (a phase the model has no
// place for) and the sink's (a .pftrace has no time more than a second before its base).
TEST_F(ConvertCommandTest, ItSaysWroteNOfMAndEveryEventLeftOutWithWhy) {
  std::ofstream(path("in.json")) << R"({"baseTimeNanoseconds": 10000000000, "traceEvents": [
    {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "X", "name": "early", "pid": 1, "tid": 1, "ts": -2000000, "dur": 1},
    {"ph": "X", "name": "kept", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  ASSERT_EQ(convert("in.json", "out.pftrace"), 0);
  EXPECT_NE(report_.find("kinetrace: wrote " + path("out.pftrace") + ": 1 of 3 events"),
            std::string::npos)
      << report_;
  EXPECT_NE(report_.find("kinetrace: left out 1 events of phase 'B'"), std::string::npos)
      << report_;
  EXPECT_NE(report_.find("kinetrace: left out 1 events more than a second before the trace's "
                         "base time, which a .pftrace cannot place\n"),
            std::string::npos)
      << report_;
  EXPECT_EQ(events("out.pftrace").size(), 1u);
}

TEST_F(ConvertCommandTest, WhatIsLeftOutIsSaidEvenWhenQuiet) {
  std::ofstream(path("in.json")) << R"({"traceEvents": [
    {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  ASSERT_EQ(convert("in.json", "out.pftrace", ~uint64_t{0}, 0, /*quiet=*/true), 0);
  EXPECT_EQ(report_,
            "kinetrace: left out 1 events of phase 'B' (the output has no place for them)\n");
}

// The .pftrace writer's tracks grew with the trace whatever --memory-mb said: a stranger's
// JSON with a thread for each event took memory in proportion to its length.
TEST_F(ConvertCommandTest, APftraceOfAThreadAnEventStaysWithinTheMemoryAllowed) {
  {
    std::ofstream in(path("threads.json"));
    in << R"({"traceEvents": [)";
    for (int tid = 1; tid <= 60000; ++tid) {
      in << (tid > 1 ? "," : "") << R"({"ph":"X","name":"s","pid":1,"ts":1,"dur":1,"tid":)" << tid
         << "}";
    }
    in << "]}";
  }
  const std::string error = kinetrace::testing::errorOf(
      [&] { convert("threads.json", "out.pftrace", ~uint64_t{0}, std::size_t{16} << 20); });
  EXPECT_EQ(error, path("out.pftrace") +
                       ": writing it as a .pftrace, its tracks would take more than the 16 MB of "
                       "memory --memory-mb allows; raise --memory-mb");
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"threads.json"}) << "no output left";
  ASSERT_EQ(convert("threads.json", "out.pftrace"), 0) << "the default allows it";
  EXPECT_NE(report_.find("60,000 of 60,000 events"), std::string::npos) << report_;
}

TEST_F(ConvertCommandTest, EventsWithoutAPlaceAreCountedInTheReport) {
  std::ofstream(path("in.json")) << R"({"traceEvents": [
    {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  ASSERT_EQ(convert("in.json", "out.pftrace"), 0);
  EXPECT_NE(report_.find("1 events"), std::string::npos) << report_;
  EXPECT_NE(
      report_.find("kinetrace: left out 1 events of phase 'B' (the output has no place for them)"),
      std::string::npos)
      << report_;
}

// What torch.profiler's traces hold and the .pftrace once got wrong: kernels that overlap on
// a stream, a launch that started two kernels, flow ids shared by two categories, whole
// doubles. Each comes back from the .pftrace as the JSON had it, argument types included
// (test/output/perfetto_import_check.py replays how Perfetto itself reads the .pftrace).
TEST_F(ConvertCommandTest, ATorchShapedTraceComesBackFromAPftraceAsItWas) {
  std::ofstream(path("torch.json")) << R"({"baseTimeNanoseconds": 1700000000000000000,
    "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 5000000, "dur": 50},
    {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 5, "pid": 10, "tid": 10, "ts": 5000000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 5000010, "dur": 5},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "pid": 10, "tid": 10, "ts": 5000010},
    {"ph": "X", "cat": "kernel", "name": "k0", "pid": 0, "tid": 7, "ts": 5000030, "dur": 16.0, "args": {"blocks per SM": 2.0, "grid": [4, 1, 1]}},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 5, "pid": 0, "tid": 7, "ts": 5000030, "bp": "e"},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 5000040, "dur": 16.0, "args": {"blocks per SM": 2.5}},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 5, "pid": 0, "tid": 7, "ts": 5000040, "bp": "e"},
    {"ph": "X", "cat": "cpu_op", "name": "MmBackward0", "pid": 10, "tid": 10, "ts": 5000100, "dur": 40},
    {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 5, "pid": 10, "tid": 10, "ts": 5000100, "bp": "e"}]})";
  ASSERT_EQ(convert("torch.json", "torch.pftrace"), 0);
  ASSERT_EQ(convert("torch.pftrace", "back.json"), 0);
  const std::vector<std::string> original = events("torch.json");
  EXPECT_EQ(events("back.json"), original);
  EXPECT_EQ(events("torch.pftrace"), original);
  std::ifstream back(path("back.json"));
  const std::string text((std::istreambuf_iterator<char>(back)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"("blocks per SM":2.0)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("blocks per SM":2.5)"), std::string::npos) << text;
}

TEST_F(ConvertCommandTest, BadInputIsAnErrorAndLeavesNoOutput) {
  std::ofstream(path("in.json")) << R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, )";
  try {
    convert("in.json", "out.pftrace");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path("in.json") + " is not valid JSON at byte "),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"in.json"}) << "no output, no temporary file";
}

TEST_F(ConvertCommandTest, AnOutputThatCannotBeWrittenIsNamedBeforeReading) {
  std::ofstream(path("in.json")) << R"({"traceEvents": []})";
  try {
    convert("in.json", "missing-dir/out.json");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path("missing-dir/out.json")), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

TEST_F(ConvertCommandTest, AnOutputThatIsTheInputIsRefusedAndTheInputKept) {
  const std::string text =
      R"({"traceEvents":[{"ph":"X","name":"k","cat":"kernel","pid":1,"tid":2,"ts":1,"dur":5}]})";
  std::ofstream(path("t.json")) << text;
  ::symlink(path("t.json").c_str(), path("link.json").c_str());
  for (const char* output : {"t.json", "link.json"}) {
    try {
      convert("t.json", output);
      FAIL() << "no error for " << output;
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()),
                "kinetrace convert: the output " + path(output) + " is the input " +
                    path("t.json") +
                    ": writing it would destroy the trace being read; name another output");
    }
    std::ifstream in(path("t.json"));
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  }
}

// `cat t.json | kinetrace convert /dev/stdin out.json`: the input is read once, as a stream.
TEST_F(ConvertCommandTest, APipeConvertsAsAFileDoes) {
  const std::string text =
      R"({"traceEvents":[{"ph":"X","name":"k","cat":"kernel","pid":1,"tid":2,"ts":1,"dur":5}]})";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
  });
  ConvertOptions options;
  options.input = "/dev/fd/" + std::to_string(fds[0]);
  options.output = path("out.json");
  options.quiet = true;
  int status = -1;
  try {
    status = convertCommand(options, stdout, stderr);
  } catch (const Error& error) {
    ADD_FAILURE() << error.what();
  }
  ::close(fds[0]);
  writer.join();
  EXPECT_EQ(status, 0);
  EXPECT_EQ(events("out.json").size(), 1u);
}

}  // namespace
}  // namespace kinetrace::cli
