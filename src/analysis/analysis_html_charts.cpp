// The charts of the HTML report, drawn as inline SVG. Every label is placed inside its
// chart's viewBox with room to spare (the browser test measures them), and every number a
// reader needs is written, not left to a tooltip.

#include "analysis/analysis_html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/text.h"

namespace kinetrace::detail::html {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string sentenceHtml(std::string_view text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t open = text.find('`', at);
    const std::size_t close = open == std::string_view::npos ? open : text.find('`', open + 1);
    if (close == std::string_view::npos) {
      out += escape(text.substr(at));
      break;
    }
    out += escape(text.substr(at, open - at)) + "<code>" +
           escape(text.substr(open + 1, close - open - 1)) + "</code>";
    at = close + 1;
  }
  return out;
}

std::string duration(int64_t ns) {
  // The magnitude as unsigned: INT64_MIN's negation does not fit an int64.
  const uint64_t m = ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  const double v = static_cast<double>(m);
  const char* sign = ns < 0 ? "-" : "";
  if (m == 0) return "0 us";  // a time, with its unit like every other
  if (m < 10'000) return fmt::format("{}{:.2f} us", sign, v / 1e3);
  if (m < 1'000'000) return fmt::format("{}{:.1f} us", sign, v / 1e3);
  if (m < 10'000'000) return fmt::format("{}{:.2f} ms", sign, v / 1e6);
  if (m < 10'000'000'000) return fmt::format("{}{:.1f} ms", sign, v / 1e6);
  return fmt::format("{}{:.2f} s", sign, v / 1e9);
}

std::string sinceStart(int64_t ns) {
  return ns == 0 ? "0.00 us" : duration(ns);
}

std::string bytes(int64_t b) {
  const double v = static_cast<double>(b);
  if (std::abs(b) < 1'000) return fmt::format("{} B", b);
  if (std::abs(b) < 1'000'000) return fmt::format("{:.1f} kB", v / 1e3);
  if (std::abs(b) < 1'000'000'000) return fmt::format("{:.1f} MB", v / 1e6);
  return fmt::format("{:.2f} GB", v / 1e9);
}

std::string percent(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%",
                                 100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : "-";
}

namespace {

bool identifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The first argument of a template argument list's text ("A<x, y>, 3" -> "A<x, y>").
std::string_view firstArgument(std::string_view list) {
  int depth = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if ((c == '>' && (i == 0 || list[i - 1] != '-')) || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) return list.substr(0, i);
  }
  return list;
}

}  // namespace

std::string shortKernelName(std::string_view name) {
  // Keep the characters outside the groups that follow a name: "<...>" template arguments
  // and "(...)" argument lists. A group after a space ("(anonymous namespace)", "(Pageable
  // -> Device)") is kept: it is not a declaration's.
  std::string kept;
  std::string_view lastTemplate;
  bool dropped = false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool opens = (c == '<' || c == '(') && !kept.empty() &&
                       (identifierChar(kept.back()) || kept.back() == '>');
    if (!opens) {
      kept += c;
      continue;
    }
    const std::size_t begin = i;
    int depth = 0;
    for (; i < name.size(); ++i) {
      const char d = name[i];
      if (d == '<' || d == '(' || d == '[' || d == '{') ++depth;
      if ((d == '>' && name[i - 1] != '-') || d == ')' || d == ']' || d == '}') --depth;
      if (depth == 0) break;
    }
    if (i >= name.size()) break;  // unbalanced (a cut name): keep what came before
    if (c == '<') lastTemplate = name.substr(begin + 1, i - begin - 1);
    dropped = true;
  }
  std::string_view base = trim(kept);
  const bool declaration =
      dropped || base.find("::") != std::string_view::npos || base.substr(0, 5) == "void ";
  if (!declaration || base.empty()) return std::string(trim(name));
  if (const std::size_t space = base.rfind(' '); space != std::string_view::npos)
    base = base.substr(space + 1);
  if (const std::size_t scope = base.rfind("::"); scope != std::string_view::npos)
    base = base.substr(scope + 2);
  if (base.empty()) return std::string(trim(name));
  // A wrapper's own name says nothing ("Kernel2", "device_kernel"): its argument does.
  std::string lower(base);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char ch) { return static_cast<char>(std::tolower(ch)); });
  const bool wrapper = lower == "kernel" || lower == "device_kernel" ||
                       (lower.rfind("kernel", 0) == 0 && lower.size() <= 7 &&
                        std::isdigit(static_cast<unsigned char>(lower.back())) != 0);
  const std::string_view argument = trim(firstArgument(lastTemplate));
  if (wrapper && !argument.empty() &&
      std::isalpha(static_cast<unsigned char>(argument.front())) != 0) {
    return std::string(base) + "<" + shortKernelName(argument) + ">";
  }
  return std::string(base);
}

std::string clip(std::string_view text, std::size_t width) {
  if (text.size() <= width) return std::string(text);
  return std::string(text.substr(0, width > 3 ? width - 3 : 0)) + "...";
}

namespace {

// `name` escaped, with a break opportunity after each separator of its parts.
std::string breakableHtml(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    out += escape(std::string_view(&c, 1));
    // After the last of a run ("::", "__"; the "..." of a clipped name stays whole), and not
    // where a space follows, which breaks already.
    const bool separator = c == '_' || c == '.' || c == '/' || c == ',' || c == ':';
    if (separator && i + 1 < name.size() && name[i + 1] != c && name[i + 1] != ' ') out += "<wbr>";
  }
  return out;
}

}  // namespace

std::string nameHtml(std::string_view full, std::size_t width, bool kernel) {
  const std::string shown = clip(kernel ? shortKernelName(full) : std::string(full), width);
  if (shown == full) return "<span>" + breakableHtml(full) + "</span>";
  return "<span class=\"name\" title=\"" + escape(full) + "\">" + breakableHtml(shown) + "</span>";
}

const Part kParts[kPartCount] = {
    {"compute", "compute", "#4e79a7", "#fff", &TimeBreakdown::computeNs},
    {"communication", "communication", "#f28e2b", "#222", &TimeBreakdown::communicationNs},
    {"memory", "memory", "#59a14f", "#fff", &TimeBreakdown::memoryNs},
    {"before the first GPU operation", "before 1st op", "#9c755f", "#fff",
     &TimeBreakdown::beforeFirstOpNs},
    {"host wait", "host wait", "#e15759", "#fff", &TimeBreakdown::hostWaitNs},
    {"launch", "launch", "#edc948", "#222", &TimeBreakdown::launchNs},
    {"kernel wait", "kernel wait", "#b07aa1", "#fff", &TimeBreakdown::kernelWaitNs},
    {"waiting on other work", "other work", "#ff9da7", "#222", &TimeBreakdown::otherWorkWaitNs},
    {"other idle", "other idle", "#bab0ac", "#222", &TimeBreakdown::otherIdleNs},
};

namespace {

// Room for a label of `chars` characters in the charts' 11 px font, generously: a label is
// only drawn where it fits.
double textWidth(std::size_t chars) {
  return 6.6 * static_cast<double>(chars);
}

class Svg {
 public:
  Svg(std::string_view chart, int width, int height) {
    out_ = fmt::format(
        "<svg class=\"chart\" data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
        "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">\n",
        chart, width, height, width, height);
  }
  void rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view title = {}) {
    out_ += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\">", x, y,
        std::max(w, 0.0), std::max(h, 0.0), fill);
    if (!title.empty()) out_ += "<title>" + escape(title) + "</title>";
    out_ += "</rect>\n";
  }
  // `kind`: "tick" (an axis's), "label" (a row's or axis's name), "value" (a number on a mark).
  void text(double x, double y, std::string_view content, std::string_view anchor,
            std::string_view kind, std::string_view title = {}, std::string_view fill = {}) {
    out_ += fmt::format(
        "<text class=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"{}\"{}>{}", kind, x, y, anchor,
        fill.empty() ? std::string() : fmt::format(" fill=\"{}\"", fill), escape(content));
    if (!title.empty()) out_ += "<title>" + escape(title) + "</title>";
    out_ += "</text>\n";
  }
  void line(double x1, double y1, double x2, double y2, std::string_view stroke = "#888") {
    out_ += fmt::format(
        "<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\"/>\n", x1, y1,
        x2, y2, stroke);
  }
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view colour) {
    out_ += "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" + std::string(colour) +
            "\" points=\"";
    for (const auto& [x, y] : points) out_ += fmt::format("{:.2f},{:.2f} ", x, y);
    out_ += "\"/>\n";
  }
  std::string finish() { return out_ + "</svg>\n"; }

 private:
  std::string out_;
};

// A step of 1, 2 or 5 times a power of ten giving at most `most` ticks over `range`.
double niceStep(double range, int most) {
  const double raw = range / std::max(1, most);
  if (raw <= 0) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
}

// A tick's value in `unit`s, with as many decimals as the step needs.
std::string tickLabel(double value, double step, double unit, std::string_view unitName) {
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step / unit) + 1e-9)));
  if (value == 0) return "0";
  return fmt::format("{:.{}f} {}", value / unit, decimals, unitName);
}

// The charts over time: names on the left, the window across, room on the right for the
// last tick's label.
constexpr int kTimeLeft = 170, kTimePlot = 860, kTimeRight = 40;
constexpr int kTimeWidth = kTimeLeft + kTimePlot + kTimeRight;
// Where a row's names end in a chart whose rows have a y axis each: left of its tick labels.
constexpr int kRowLabelRight = kTimeLeft - 44;
constexpr std::size_t kLabelChars = 19;  // what fits left of kRowLabelRight

struct Window {
  int64_t startNs = 0;
  int64_t lengthNs = 0;
  double x(int64_t ns) const {
    return kTimeLeft + kTimePlot * static_cast<double>(ns - startNs) /
                           static_cast<double>(std::max<int64_t>(lengthNs, 1));
  }
};

// The rank's window, as its GPU timeline has it: from the trace's first event to its last.
Window windowOf(const RankReport& r) {
  Window w;
  for (const DeviceReport& d : r.devices) {
    if (d.busyTimeline.empty()) continue;
    w.startNs = d.timelineStartNs;
    w.lengthNs = std::max(w.lengthNs, d.time.windowNs);
  }
  return w;
}

// A time axis at `y`: ticks at round times from the window's start, each with its unit.
void timeAxis(Svg& svg, double y, const Window& w) {
  svg.line(kTimeLeft, y, kTimeLeft + kTimePlot, y);
  const double length = static_cast<double>(w.lengthNs);
  const double unit = length >= 2e9 ? 1e9 : length >= 2e6 ? 1e6 : 1e3;
  const char* unitName = length >= 2e9 ? "s" : length >= 2e6 ? "ms" : "us";
  const double step = niceStep(length, 8);
  const double scale = kTimePlot / std::max(length, 1.0);
  double last = 0;
  for (double t = 0; t <= length + step * 1e-9; t += step) last = t;
  // The window's end is labelled too, unless a round tick is on it; a round tick too close
  // to it gives up its label.
  const bool endLabel = (length - last) * scale >= 1;
  for (double t = 0; t <= last; t += step) {
    const double x = kTimeLeft + t * scale;
    svg.line(x, y, x, y + 4);
    if (endLabel && t > 0 && (length - t) * scale < 70) continue;
    svg.text(x, y + 16, tickLabel(t, step, unit, unitName), "middle", "tick");
  }
  if (endLabel) {
    const double v = length / unit;
    svg.line(kTimeLeft + kTimePlot, y, kTimeLeft + kTimePlot, y + 4);
    svg.text(kTimeLeft + kTimePlot, y + 16,
             fmt::format("{:.{}f} {}", v,
                         v >= 100  ? 0
                         : v >= 10 ? 1
                                   : 2,
                         unitName),
             "middle", "tick");
  }
  svg.text(kTimeLeft - 18, y + 16, "from trace start", "end", "label");
}

// What a chart's y axes measure, above their tick labels.
void yAxisName(Svg& svg, std::string_view name) {
  svg.text(kTimeLeft - 8, 12, name, "end", "label");
}

// A y axis beside a row `height` high from `top`: a tick at each value's fraction of the
// row's height, labelled.
void rowAxis(Svg& svg, double top, double height,
             const std::vector<std::pair<double, std::string>>& ticks) {
  svg.line(kTimeLeft, top, kTimeLeft, top + height);
  for (const auto& [fraction, label] : ticks) {
    const double y = top + height * (1 - fraction);
    svg.line(kTimeLeft - 4, y, kTimeLeft, y);
    svg.text(kTimeLeft - 8, y + 4, label, "end", "tick");
  }
}

}  // namespace

std::string breakdownBars(std::string_view chart,
                          const std::vector<std::pair<std::string, TimeBreakdown>>& rows) {
  constexpr int kRow = 26, kBar = 20;
  const int height = static_cast<int>(rows.size()) * kRow + 30;
  Svg svg(chart, kTimeWidth, height);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [label, t] = rows[i];
    const double y = static_cast<double>(i) * kRow + 4;
    svg.text(kTimeLeft - 8, y + 14, clip(label, kLabelChars), "end", "label",
             label.size() > kLabelChars ? label : "");
    double x = kTimeLeft;
    for (const Part& p : kParts) {
      const int64_t ns = t.*p.field;
      const double share = t.windowNs > 0 ? static_cast<double>(ns) / t.windowNs : 0.0;
      const double w = kTimePlot * share;
      if (w <= 0) continue;
      const std::string title =
          fmt::format("{}: {} {} ({:.1f}%)", label, p.name, duration(ns), 100 * share);
      svg.rect(x, y, w, kBar, p.colour, title);
      const std::string value = fmt::format("{:.0f}%", 100 * share);
      if (w >= textWidth(value.size()) + 6)
        svg.text(x + w / 2, y + 14, value, "middle", "value", title, p.textColour);
      x += w;
    }
  }
  const double axis = static_cast<double>(rows.size()) * kRow + 4;
  svg.line(kTimeLeft, axis, kTimeLeft + kTimePlot, axis);
  for (int tick = 0; tick <= 100; tick += 10) {
    const double x = kTimeLeft + kTimePlot * tick / 100.0;
    svg.line(x, axis, x, axis + 4);
    svg.text(x, axis + 16, fmt::format("{}%", tick), "middle", "tick");
  }
  svg.text(kTimeLeft - 18, axis + 16, "of the window", "end", "label");
  return svg.finish();
}

std::string timelineChart(const RankReport& r) {
  const Window w = windowOf(r);
  if (w.lengthNs <= 0) return "";
  // A row per GPU, each with its own 0-100% axis; what they measure is named above them.
  constexpr int kTop = 24, kRow = 58, kBar = 40;
  const int rows = static_cast<int>(r.devices.size());
  const int axis = kTop + (rows - 1) * kRow + kBar + 6;
  Svg svg("timeline", kTimeWidth, axis + 30);
  yAxisName(svg, "busy");
  for (int i = 0; i < rows; ++i) {
    const DeviceReport& d = r.devices[static_cast<std::size_t>(i)];
    const double y = kTop + i * kRow;
    svg.text(kRowLabelRight, y + 14, fmt::format("GPU {}", d.device), "end", "label");
    svg.text(kRowLabelRight, y + 28, percent(d.time.busyNs, d.time.windowNs) + " busy", "end",
             "label");
    svg.rect(kTimeLeft, y, kTimePlot, kBar, "#eeeeee");
    const double binWidth = static_cast<double>(kTimePlot) /
                            static_cast<double>(std::max<std::size_t>(1, d.busyTimeline.size()));
    for (std::size_t b = 0; b < d.busyTimeline.size(); ++b) {
      const double busy = std::min(1.0, d.busyTimeline[b]);
      if (busy <= 0) continue;
      const double h = kBar * busy;
      svg.rect(kTimeLeft + binWidth * static_cast<double>(b), y + kBar - h, binWidth, h, "#4e79a7",
               fmt::format("GPU {} at {}: busy {:.0f}%", d.device,
                           duration(d.timelineBinNs * static_cast<int64_t>(b)), busy * 100));
    }
    rowAxis(svg, y, kBar, {{0.0, "0%"}, {0.5, "50%"}, {1.0, "100%"}});
  }
  timeAxis(svg, axis, w);
  return svg.finish();
}

std::string queueDepthChart(const RankReport& r, std::size_t maxStreams) {
  const Window w = windowOf(r);
  if (w.lengthNs <= 0) return "";
  // The streams that queued anything, the busiest first, then in device and stream order.
  std::vector<std::pair<const QueueDepthTimeline*, uint64_t>> shown;
  for (const QueueDepthTimeline& q : r.queueDepthTimelines) {
    if (std::all_of(q.maxDepth.begin(), q.maxDepth.end(), [](int d) { return d <= 0; })) continue;
    uint64_t operations = 0;
    for (const DeviceReport& d : r.devices) {
      for (const StreamBreakdown& s : d.streams) {
        if (s.device == q.device && s.stream == q.stream) operations = s.operations;
      }
    }
    shown.emplace_back(&q, operations);
  }
  if (shown.empty()) return "";
  std::stable_sort(shown.begin(), shown.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (shown.size() > maxStreams) shown.resize(maxStreams);
  std::stable_sort(shown.begin(), shown.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.first->device, a.first->stream) <
           std::make_pair(b.first->device, b.first->stream);
  });

  // A row per stream, each with an axis of its own scale (at most 3 steps: 16 px apart, room
  // for a tick label each); what they count is named above them.
  constexpr int kTop = 24, kRow = 68, kBar = 48;
  const int rows = static_cast<int>(shown.size());
  const int axis = kTop + (rows - 1) * kRow + kBar + 6;
  Svg svg("queue-depth", kTimeWidth, axis + 30);
  yAxisName(svg, "operations queued");
  for (int i = 0; i < rows; ++i) {
    const QueueDepthTimeline& q = *shown[static_cast<std::size_t>(i)].first;
    const int most = *std::max_element(q.maxDepth.begin(), q.maxDepth.end());
    const double step = std::max(1.0, niceStep(most, 3));
    const double axisTop = std::ceil(most / step - 1e-9) * step;
    const double y = kTop + i * kRow;
    const std::string label = fmt::format("GPU {} stream {}", q.device, q.stream);
    svg.text(kRowLabelRight, y + 14, clip(label, kLabelChars), "end", "label",
             label.size() > kLabelChars ? label : "");
    svg.text(kRowLabelRight, y + 28, fmt::format("up to {} queued", most), "end", "label");
    svg.line(kTimeLeft, y + kBar, kTimeLeft + kTimePlot, y + kBar, "#ccc");
    std::vector<std::pair<double, std::string>> ticks;
    for (double v = 0; v <= axisTop + 1e-9; v += step)
      ticks.emplace_back(v / axisTop, withThousands(static_cast<uint64_t>(v)));
    rowAxis(svg, y, kBar, ticks);
    const DeviceReport* device = nullptr;
    for (const DeviceReport& d : r.devices) {
      if (d.device == q.device) device = &d;
    }
    if (device == nullptr) continue;
    const double binWidth = kTimePlot * static_cast<double>(device->timelineBinNs) /
                            static_cast<double>(std::max<int64_t>(w.lengthNs, 1));
    for (std::size_t b = 0; b < q.maxDepth.size(); ++b) {
      if (q.maxDepth[b] <= 0) continue;
      const double x =
          w.x(device->timelineStartNs + device->timelineBinNs * static_cast<int64_t>(b));
      if (x >= kTimeLeft + kTimePlot) break;
      const double h = kBar * static_cast<double>(q.maxDepth[b]) / axisTop;
      svg.rect(
          x, y + kBar - h, std::min(binWidth, kTimeLeft + kTimePlot - x), h, "#76b7b2",
          fmt::format("stream {} from {}: up to {} queued", q.stream,
                      duration(device->timelineBinNs * static_cast<int64_t>(b)), q.maxDepth[b]));
    }
  }
  timeAxis(svg, axis, w);
  return svg.finish();
}

std::string copyBandwidthChart(const RankReport& r) {
  const Window w = windowOf(r);
  const CopyBandwidthReport& c = r.copyBandwidth;
  if (w.lengthNs <= 0 || c.kinds.empty()) return "";
  // A row per kind, each with an axis of its own scale, as the queue depth's rows.
  constexpr int kTop = 24, kRow = 68, kBar = 48;
  const int rows = static_cast<int>(c.kinds.size());
  const int axis = kTop + (rows - 1) * kRow + kBar + 6;
  Svg svg("copy-bandwidth", kTimeWidth, axis + 30);
  yAxisName(svg, "GB/s");
  const double binWidth = kTimePlot * static_cast<double>(c.timelineBinNs) /
                          static_cast<double>(std::max<int64_t>(w.lengthNs, 1));
  for (int i = 0; i < rows; ++i) {
    const CopyKindBandwidth& k = c.kinds[static_cast<std::size_t>(i)];
    const double most =
        k.timeline.empty() ? 0.0 : *std::max_element(k.timeline.begin(), k.timeline.end());
    const double step = niceStep(std::max(most, 1e-3), 3);
    const double axisTop = std::max(step, std::ceil(most / step - 1e-9) * step);
    const double y = kTop + i * kRow;
    svg.text(kRowLabelRight, y + 14, clip(k.kind, kLabelChars), "end", "label");
    svg.text(kRowLabelRight, y + 28, fmt::format("mean {:.2f} GB/s", k.meanGbps), "end", "label");
    svg.line(kTimeLeft, y + kBar, kTimeLeft + kTimePlot, y + kBar, "#ccc");
    std::vector<std::pair<double, std::string>> ticks;
    for (double v = 0; v <= axisTop + step * 1e-9; v += step) {
      ticks.emplace_back(v / axisTop, v == 0 ? "0" : fmt::format("{:g}", v));
    }
    rowAxis(svg, y, kBar, ticks);
    for (std::size_t b = 0; b < k.timeline.size(); ++b) {
      if (k.timeline[b] <= 0) continue;
      const double x = w.x(c.timelineStartNs + c.timelineBinNs * static_cast<int64_t>(b));
      if (x >= kTimeLeft + kTimePlot) break;
      const double h = kBar * std::min(1.0, k.timeline[b] / axisTop);
      svg.rect(x, y + kBar - h, std::min(binWidth, kTimeLeft + kTimePlot - x), h, "#f28e2b",
               fmt::format("{} from {}: {:.2f} GB/s on average", k.kind,
                           duration(c.timelineBinNs * static_cast<int64_t>(b)), k.timeline[b]));
    }
  }
  timeAxis(svg, axis, w);
  return svg.finish();
}

std::string memoryChart(const RankReport& r) {
  const Window w = windowOf(r);
  const auto& curve = r.memoryCurve;
  if (w.lengthNs <= 0 || curve.empty()) return "";
  // Above the plot, room for the peak's label.
  constexpr int kTop = 30, kHeight = 170;
  Svg svg("memory", kTimeWidth, kTop + kHeight + 30);
  yAxisName(svg, "allocated");
  int64_t top = std::max<int64_t>(1, r.memory.peakBytes);
  for (const MemorySample& s : curve) top = std::max(top, s.allocatedBytes);
  // A y axis of round values in the unit of the peak.
  const double unit = top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : top >= 1e3 ? 1e3 : 1;
  const char* unitName = top >= 1e9 ? "GB" : top >= 1e6 ? "MB" : top >= 1e3 ? "kB" : "B";
  const double step = niceStep(static_cast<double>(top), 4);
  const double axisTop = std::ceil(static_cast<double>(top) / step - 1e-9) * step;
  auto y = [&](double b) { return kTop + kHeight - kHeight * b / axisTop; };
  for (double v = 0; v <= axisTop + step * 1e-9; v += step) {
    svg.line(kTimeLeft - 4, y(v), kTimeLeft + kTimePlot, y(v), v == 0 ? "#888" : "#eee");
    svg.text(kTimeLeft - 8, y(v) + 4, tickLabel(v, step, unit, unitName), "end", "tick");
  }
  // What is allocated holds until the next sample; the last until the window's end.
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const double x =
        std::clamp(w.x(curve[i].timeNs), double{kTimeLeft}, double{kTimeLeft + kTimePlot});
    const double level = y(static_cast<double>(curve[i].allocatedBytes));
    if (i > 0) points.emplace_back(x, points.back().second);
    points.emplace_back(x, level);
  }
  points.emplace_back(kTimeLeft + kTimePlot, points.back().second);
  svg.polyline(points, "#e15759");
  timeAxis(svg, kTop + kHeight, w);
  const double peakX =
      std::clamp(w.x(r.memory.peakAtNs), double{kTimeLeft}, double{kTimeLeft + kTimePlot});
  const double peakY = y(static_cast<double>(r.memory.peakBytes));
  const std::string peak = "peak " + bytes(r.memory.peakBytes);
  svg.rect(peakX - 3, peakY - 3, 6, 6, "#e15759",
           peak + " at " + duration(r.memory.peakAtNs - w.startNs));
  // The peak's value above the plot, over the peak (moved in where it would stick out): the
  // line never rises above its peak, so it crosses the label nowhere, where one beside the
  // point was crossed wherever the line came back down close by. A leader joins the two.
  const double half = textWidth(peak.size()) / 2;
  double labelX = peakX;
  std::string_view anchor = "middle";
  if (peakX - half < kTimeLeft) {
    labelX = kTimeLeft;
    anchor = "start";
  } else if (peakX + half > kTimeLeft + kTimePlot) {
    labelX = kTimeLeft + kTimePlot;
    anchor = "end";
  }
  if (peakY - 4 > kTop - 8) svg.line(peakX, kTop - 8, peakX, peakY - 4, "#bbb");
  svg.text(labelX, kTop - 12, peak, anchor, "value");
  return svg.finish();
}

std::string latencyHistogram(const RankReport& r) {
  const auto& buckets = r.launchLatencyHistogram;
  if (buckets.empty()) return "";
  // The buckets up to one past the last used, at least 8: wide bars, no empty tail.
  std::size_t shown = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b] > 0) shown = b + 2;
  }
  shown = std::min(buckets.size(), std::max<std::size_t>(shown, 8));
  constexpr int kTop = 16, kHeight = 150;
  Svg svg("launch-latency", kTimeWidth, kTop + kHeight + 46);
  uint64_t most = 1;
  for (uint64_t n : buckets) most = std::max(most, n);
  const double step = std::max(1.0, niceStep(static_cast<double>(most), 4));
  const double axisTop = std::ceil(static_cast<double>(most) / step - 1e-9) * step;
  auto y = [&](double n) { return kTop + kHeight - kHeight * n / axisTop; };
  for (double v = 0; v <= axisTop + 1e-9; v += step) {
    svg.line(kTimeLeft - 4, y(v), kTimeLeft + kTimePlot, y(v), v == 0 ? "#888" : "#eee");
    svg.text(kTimeLeft - 8, y(v) + 4, withThousands(static_cast<uint64_t>(v)), "end", "tick");
  }
  svg.text(kTimeLeft - 48, kTop + kHeight / 2.0, "operations", "end", "label");
  const double w = static_cast<double>(kTimePlot) / static_cast<double>(shown);
  // The edge of bucket b (b >= 1) is 2^(b-1) us.
  auto edge = [](std::size_t b) {
    if (b == 0) return std::string("0");
    const int64_t us = int64_t{1} << (b - 1);
    return us < 1000 ? fmt::format("{} us", us) : duration(us * 1000);
  };
  std::size_t every = 1;
  while (w * static_cast<double>(every) < textWidth(8)) ++every;
  for (std::size_t b = 0; b < shown; ++b) {
    const double x = kTimeLeft + w * static_cast<double>(b);
    const double h = kHeight * static_cast<double>(buckets[b]) / axisTop;
    const std::string range =
        b + 1 == buckets.size() ? edge(b) + " and more" : edge(b) + " to " + edge(b + 1);
    if (buckets[b] > 0) {
      svg.rect(x + 1, y(static_cast<double>(buckets[b])), w - 2, h, "#4e79a7",
               fmt::format("{}: {} operations", range, buckets[b]));
      const std::string value = withThousands(buckets[b]);
      if (textWidth(value.size()) <= w)
        svg.text(x + w / 2, y(static_cast<double>(buckets[b])) - 3, value, "middle", "value");
    }
    if (b % every == 0) {
      svg.line(x, kTop + kHeight, x, kTop + kHeight + 4);
      svg.text(x, kTop + kHeight + 16, edge(b), "middle", "tick");
    }
  }
  svg.text(kTimeLeft + kTimePlot, kTop + kHeight + 36,
           "from the launch call to the operation's start (buckets double in width)", "end",
           "label");
  return svg.finish();
}

}  // namespace kinetrace::detail::html
