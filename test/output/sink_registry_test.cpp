#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/chrome_json_sink.h"
#include "support/test_support.h"

namespace kinetrace {
namespace {

namespace fs = std::filesystem;

// A sink that only remembers which URL opened it.
class UrlSink : public Sink {
 public:
  explicit UrlSink(std::string openedWith) : url(std::move(openedWith)) {}
  void begin(const TraceHeader&) override {}
  void write(const Event&) override {}
  void end(const Metadata&) override {}
  std::string url;
};

std::string urlOf(const std::unique_ptr<Sink>& sink) {
  auto* urlSink = dynamic_cast<UrlSink*>(sink.get());
  return urlSink ? urlSink->url : "<not a UrlSink>";
}

std::string errorOf(const std::string& url) {
  try {
    openSink(url);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

class SinkRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kinetrace_sinks_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a one-event trace through the sink and returns the parsed file.
  static nlohmann::json writeOneEvent(Sink& sink, const fs::path& path) {
    TraceHeader header;
    header.traceName = path.string();
    sink.begin(header);
    Event event;
    event.name = "step";
    sink.write(event);
    sink.end({});
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
    return names;
  }

  fs::path dir_;
};

TEST_F(SinkRegistryTest, BarePathWritesChromeJsonThere) {
  const fs::path path = dir_ / "trace.json";
  auto sink = openSink(path.string());
  EXPECT_EQ(writeOneEvent(*sink, path)["traceEvents"][0]["name"], "step");
}

TEST_F(SinkRegistryTest, FileUrlWithAbsolutePathWritesThatPath) {
  const fs::path path = dir_ / "trace.json";
  auto sink = openSink("file://" + path.string());  // "file:///tmp/..."
  EXPECT_EQ(writeOneEvent(*sink, path)["traceEvents"].size(), 1u);
}

TEST_F(SinkRegistryTest, FileUrlWithoutLeadingSlashIsARelativePath) {
  const fs::path previous = fs::current_path();
  fs::current_path(dir_);
  auto sink = openSink("file://relative.json");
  const auto parsed = writeOneEvent(*sink, dir_ / "relative.json");
  fs::current_path(previous);
  EXPECT_EQ(parsed["traceEvents"].size(), 1u);
}

TEST_F(SinkRegistryTest, PathWithSeparatorAfterASlashIsABarePath) {
  fs::create_directory(dir_ / "a:");
  const std::string path = (dir_ / "a:").string() + "//trace.json";
  auto sink = openSink(path);
  EXPECT_EQ(writeOneEvent(*sink, dir_ / "a:" / "trace.json")["traceEvents"].size(), 1u);
}

TEST_F(SinkRegistryTest, FileSinkDestroyedBeforeEndLeavesNoFileAndNoTempFile) {
  {
    auto sink = openSink((dir_ / "trace.json").string());
    sink->begin(TraceHeader{});
    Event event;
    event.name = "unsaved";
    sink->write(event);
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(SinkRegistryTest, UnwritablePathErrorNamesThePath) {
  const std::string path = (dir_ / "no" / "such" / "dir" / "trace.json").string();
  const std::string missing = (dir_ / "no").string();
  EXPECT_EQ(errorOf(path),
            "cannot write trace to " + path + ": " + missing + ": No such file or directory");
  EXPECT_EQ(errorOf("file://" + path),
            "cannot write trace to " + path + ": " + missing + ": No such file or directory");
}

TEST_F(SinkRegistryTest, UserSchemeFactoryReceivesTheWholeUrl) {
  registerSink("memtest", [](const std::string& url) { return std::make_unique<UrlSink>(url); });
  EXPECT_EQ(urlOf(openSink("memtest://bucket/run 1?x=y")), "memtest://bucket/run 1?x=y");
}

TEST_F(SinkRegistryTest, SchemesAreCaseInsensitive) {
  registerSink("CaseTest", [](const std::string& url) { return std::make_unique<UrlSink>(url); });
  EXPECT_EQ(urlOf(openSink("casetest://a")), "casetest://a");
  EXPECT_EQ(urlOf(openSink("CASETEST://b")), "CASETEST://b");
}

TEST_F(SinkRegistryTest, UnknownSchemeErrorNamesItAndListsTheRegisteredOnes) {
  registerSink("listed", [](const std::string& url) { return std::make_unique<UrlSink>(url); });
  const std::string message = errorOf("s3://bucket/trace.json");
  EXPECT_EQ(message.rfind("no sink registered for URL scheme \"s3\" in \"s3://bucket/trace.json\" "
                          "(registered: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("file"), std::string::npos) << message;
  EXPECT_NE(message.find("listed"), std::string::npos) << message;
}

TEST_F(SinkRegistryTest, RegisteringASchemeAgainReplacesTheFactory) {
  registerSink("again", [](const std::string&) { return std::make_unique<UrlSink>("first"); });
  registerSink("again", [](const std::string&) { return std::make_unique<UrlSink>("second"); });
  EXPECT_EQ(urlOf(openSink("again://x")), "second");
}

TEST_F(SinkRegistryTest, RegisteringFileOverridesTheBuiltInFileSink) {
  registerSink("file", [](const std::string& url) { return std::make_unique<UrlSink>(url); });
  EXPECT_EQ(urlOf(openSink("file:///tmp/x.json")), "file:///tmp/x.json");
  // The built-in, for the other tests.
  registerSink("file", [](const std::string& url) { return detail::openChromeJsonFile(url, {}); });
}

TEST_F(SinkRegistryTest, EmptyUrlIsAnError) {
  EXPECT_EQ(errorOf(""), "cannot open a sink for an empty URL or path");
}

TEST_F(SinkRegistryTest, FileUrlWithoutAPathIsAnError) {
  EXPECT_EQ(errorOf("file://"), "trace URL \"file://\" has no path");
}

TEST_F(SinkRegistryTest, RefusesAPathThatIsNotARegularFileBeforeWriting) {
  EXPECT_EQ(errorOf("/dev/null"),
            "cannot write trace to /dev/null: it is a character device, not a regular file");
  EXPECT_EQ(errorOf(dir_.string()),
            "cannot write trace to " + dir_.string() + ": it is a directory, not a regular file");
}

TEST_F(SinkRegistryTest, InvalidSchemeNamesAreRefused) {
  auto factory = [](const std::string& url) { return std::make_unique<UrlSink>(url); };
  for (const char* bad : {"", "1abc", "has space", "a/b", "a:"}) {
    EXPECT_THROW(registerSink(bad, factory), Error) << bad;
  }
  EXPECT_EQ(kinetrace::testing::errorOf([&factory] { registerSink("has space", factory); }),
            "cannot register sink scheme \"has space\": a scheme is a letter followed by "
            "letters, digits, '+', '-' or '.'");
  EXPECT_EQ(kinetrace::testing::errorOf([] { registerSink("nofactory", SinkFactory{}); }),
            "cannot register sink scheme \"nofactory\": no factory");
}

TEST_F(SinkRegistryTest, FactoryReturningNoSinkIsAnError) {
  registerSink("nullsink", [](const std::string&) { return std::unique_ptr<Sink>(); });
  EXPECT_EQ(errorOf("nullsink://x"),
            "the sink factory for scheme \"nullsink\" returned no sink for \"nullsink://x\"");
}

TEST_F(SinkRegistryTest, RegisteringAndOpeningFromManyThreadsIsSafe) {
  std::atomic<int> opened{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &opened] {
      const std::string scheme = "thread" + std::to_string(t % 2);
      for (int i = 0; i < 200; ++i) {
        registerSink(scheme, [](const std::string& url) { return std::make_unique<UrlSink>(url); });
        if (urlOf(openSink(scheme + "://x")) == scheme + "://x") ++opened;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(opened.load(), 8 * 200);
}

}  // namespace
}  // namespace kinetrace
