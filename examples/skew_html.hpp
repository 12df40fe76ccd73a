// The skew tool's HTML report (skew --html FILE): one self-contained page, inline SVG, no
// script and nothing fetched, that shows what the text report says as charts.
//
// Machine-readable figures: every number drawn or printed carries, in a data-* attribute, the
// value `skew --json` prints for it, written the same way (10 significant digits), so that a
// test can compare the page with the JSON (tests/tool/check_skew_html.cmake).
#pragma once

#include <keyroute/detail/json.hpp>  // utf8_sequence

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <locale>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace skew_html {

/// One scheme's results, as skew computed them (the JSON's `schemes[i]`).
struct scheme {
    std::string name;         ///< the JSON's name: static, seed, keyroute
    std::string label;        ///< plain words: "static hashing", ...
    std::string description;  ///< one line: how it routes
    std::string note;         ///< may be empty
    double max_over_mean = 0;
    std::vector<double> window_max_over_mean;
    std::vector<std::uint64_t> window_index;
    std::vector<std::uint64_t> load;  ///< events per partition
    std::vector<std::uint32_t> hot_key_partitions;
    std::uint64_t split_keys = 0;
    double split_key_event_share = 0;  ///< shares in [0, 1]
    double moved_share = 0;
    bool has_stamps = false;
    double salted_share = 0;
    double stamped_share = 0;
    std::size_t memory_bytes = 0;
    std::string order;  ///< what order it gives up, in words
    std::string state;  ///< what state it keeps, in words (may be empty)
};

struct hot_key {
    std::string_view key;
    std::uint64_t events = 0;
    double share = 0;
};

struct report {
    std::string source;
    std::uint64_t events = 0;
    std::uint64_t distinct_keys = 0;
    std::uint64_t skipped = 0;
    std::uint32_t partitions = 0;
    std::uint64_t windows = 0;
    double window_seconds = 0;
    std::string static_scheme;  ///< the static scheme's name (--scheme)
    std::vector<hot_key> hot_keys;
    std::vector<scheme> schemes;
};

namespace detail {

/// A number exactly as skew --json writes it (an ostream at 10 significant digits).
inline auto num(double v) -> std::string {
    std::ostringstream s;
    s.imbue(std::locale::classic());
    s << std::setprecision(10) << v;
    return s.str();
}

inline auto fixed(double v, int decimals) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

inline auto grouped(std::uint64_t v) -> std::string {
    const std::string digits = std::to_string(v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

inline auto percent(double share) -> std::string { return fixed(100 * share, 1) + "%"; }

/// Text for HTML content and attributes: markup characters escaped, a byte that is not UTF-8
/// and a control character (C0, C1, DEL) written as U+FFFD, so the page is valid UTF-8 and
/// says the same as the JSON's `key` (whose control characters are escapes, not U+FFFD).
inline auto text(std::string_view s) -> std::string {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = keyroute::detail::utf8_sequence(s.substr(i));
        const auto c = static_cast<unsigned char>(s[i]);
        const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0;
        if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7f)) || c1) {
            out += "\xef\xbf\xbd";
            i += n == 0 ? 1 : n;
            continue;
        }
        if (n == 1) {
            switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += static_cast<char>(c);
            }
        } else {
            out.append(s.data() + i, n);
        }
        i += n;
    }
    return out;
}

/// A key cut to `max` characters, with "..." when cut.
inline auto short_text(std::string_view s, std::size_t max) -> std::string {
    std::size_t i = 0;
    std::size_t chars = 0;
    while (i < s.size() && chars < max) {
        const std::size_t n = keyroute::detail::utf8_sequence(s.substr(i));
        i += n == 0 ? 1 : n;
        ++chars;
    }
    return i < s.size() ? text(s.substr(0, i)) + "..." : text(s);
}

/// A value as the JSON writes it: integers whole, the others at 10 significant digits.
template <class T>
auto value(T v) -> std::string {
    if constexpr (std::is_floating_point_v<T>) {
        return num(v);
    } else {
        return std::to_string(v);
    }
}

template <class T>
auto list(const std::vector<T>& values) -> std::string {
    std::string out;
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i != 0) out += ',';
        out += value(values[i]);
    }
    return out;
}

/// The fill of each scheme's bars, by position: static hashing, the naive router, keyroute.
inline auto colour(std::size_t scheme_index) -> const char* {
    static const char* const colours[] = {"#d62728", "#ff7f0e", "#1f77b4"};
    return colours[scheme_index % 3];
}

/// A round axis maximum at or above `v` (1, 2 or 5 times a power of ten).
inline auto nice_ceiling(double v) -> double {
    if (!(v > 0)) return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        if (v <= m * p * (1 + 1e-12)) return m * p;
    }
    return 10 * p;
}

/// Bars of `values` (each drawn as value / mean, the unit of the y axis), `max_bars` at most:
/// above that, each bar is the largest of a run of consecutive values. `what` names one value
/// (partition, window); `first_index` maps a bar's first value to its label.
struct bar_chart {
    std::string cls;            // the rects' class: partition-bar, window-bar
    std::string what;           // "partition", "window"
    std::string unit;           // the y axis: "x mean"
    const char* fill = "#000";  // bar colour
    double width = 1040;
    double height = 220;
    std::size_t max_bars = 400;
    double reference = 1;  // a dashed line (the mean), in y units
    std::string reference_label = "mean";
};

template <class Value, class Label>
void draw_bars(std::ostream& out, const bar_chart& c, const std::vector<Value>& values,
               double scale, const std::string& attributes, Label&& label_of) {
    const double left = 56;
    const double bottom = 28;
    const double top = 14;
    const double plot_w = c.width - left - 10;
    const double plot_h = c.height - top - bottom;
    const std::size_t n = values.size();
    const std::size_t per_bar = n <= c.max_bars ? 1 : (n + c.max_bars - 1) / c.max_bars;
    const std::size_t bars = n == 0 ? 0 : (n + per_bar - 1) / per_bar;
    double top_value = c.reference;
    for (const Value v : values) top_value = std::max(top_value, static_cast<double>(v) * scale);
    const double y_max = nice_ceiling(top_value);
    const auto y_of = [&](double v) { return top + plot_h * (1 - v / y_max); };
    out << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << c.width
        << "\" height=\"" << c.height << "\" viewBox=\"0 0 " << c.width << ' ' << c.height
        << "\" role=\"img\"" << attributes << " data-bars=\"" << bars << "\" data-per-bar=\""
        << per_bar << "\">\n";
    // Axis ticks at 0, y_max / 2, y_max.
    for (int t = 0; t <= 2; ++t) {
        const double v = y_max * t / 2;
        const double y = y_of(v);
        out << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << y << "\" y2=\""
            << y << "\" stroke=\"#ddd\"/>"
            << "<text x=\"" << left - 6 << "\" y=\"" << y + 4
            << "\" text-anchor=\"end\" font-size=\"11\">" << fixed(v, v < 10 ? 2 : 0)
            << "</text>\n";
    }
    out << "<text x=\"12\" y=\"" << top + plot_h / 2
        << "\" font-size=\"11\" transform=\"rotate(-90 12 " << top + plot_h / 2
        << ")\" text-anchor=\"middle\">" << c.unit << "</text>\n";
    const double slot = bars == 0 ? 0 : plot_w / static_cast<double>(bars);
    const double gap = slot > 4 ? 1 : 0;
    for (std::size_t b = 0; b < bars; ++b) {
        const std::size_t first = b * per_bar;
        const std::size_t last = std::min(n, first + per_bar) - 1;
        Value v = values[first];
        for (std::size_t i = first + 1; i <= last; ++i) v = std::max(v, values[i]);
        const double y = y_of(static_cast<double>(v) * scale);
        out << "<rect class=\"" << c.cls << "\" x=\""
            << fixed(left + slot * static_cast<double>(b), 2) << "\" y=\"" << fixed(y, 2)
            << "\" width=\"" << fixed(std::max(slot - gap, 0.5), 2) << "\" height=\""
            << fixed(top + plot_h - y, 2) << "\" fill=\"" << c.fill << "\"";
        if (per_bar == 1) {
            out << " data-" << c.what << "=\"" << label_of(first) << "\"";
        } else {
            out << " data-first=\"" << label_of(first) << "\" data-last=\"" << label_of(last)
                << "\"";
        }
        out << " data-value=\"" << value(v) << "\"><title>" << c.what << ' ' << label_of(first);
        if (last != first) out << " to " << label_of(last);
        out << ": " << fixed(static_cast<double>(v) * scale, 2) << ' ' << c.unit
            << "</title></rect>\n";
    }
    const double ry = y_of(c.reference);
    out << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << ry << "\" y2=\""
        << ry << "\" stroke=\"#333\" stroke-dasharray=\"5 4\"/>"
        << "<text x=\"" << left + plot_w << "\" y=\"" << ry - 4
        << "\" text-anchor=\"end\" font-size=\"11\">" << c.reference_label << "</text>\n";
    // x axis: the first and last labels.
    if (bars > 0) {
        out << "<text x=\"" << left << "\" y=\"" << c.height - 10 << "\" font-size=\"11\">"
            << c.what << ' ' << label_of(0) << "</text><text x=\"" << left + plot_w << "\" y=\""
            << c.height - 10 << "\" font-size=\"11\" text-anchor=\"end\">" << c.what << ' '
            << label_of(n - 1) << "</text>\n";
    }
    if (per_bar > 1) {
        out << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << c.height - 10
            << "\" font-size=\"11\" text-anchor=\"middle\">each bar: the largest of " << per_bar
            << ' ' << c.what << "s</text>\n";
    }
    out << "</svg>\n";
}

/// Horizontal bars of each scheme's max/mean, on a log scale from 1 (a perfectly even load).
inline void draw_comparison(std::ostream& out, const report& r) {
    const double width = 1040;
    const double row = 34;
    const double left = 230;
    const double right = 90;
    const double height = row * static_cast<double>(r.schemes.size()) + 30;
    double top_value = 2;
    for (const scheme& s : r.schemes) top_value = std::max(top_value, s.max_over_mean);
    const double log_max = std::log10(nice_ceiling(top_value));
    const double plot_w = width - left - right;
    const auto x_of = [&](double v) {
        return left + plot_w * std::log10(std::max(v, 1.0)) / log_max;
    };
    out << "<svg class=\"chart\" id=\"comparison\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
        << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << ' ' << height
        << "\" role=\"img\">\n";
    for (double v = 1; v <= std::pow(10.0, log_max) * (1 + 1e-9); v *= 10) {
        const double x = x_of(v);
        out << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"4\" y2=\"" << height - 22
            << "\" stroke=\"#ddd\"/><text x=\"" << x << "\" y=\"" << height - 8
            << "\" font-size=\"11\" text-anchor=\"middle\">" << fixed(v, 0) << "x</text>\n";
    }
    for (std::size_t i = 0; i < r.schemes.size(); ++i) {
        const scheme& s = r.schemes[i];
        const double y = 6 + row * static_cast<double>(i);
        const double x = x_of(s.max_over_mean);
        out << "<text x=\"" << left - 8 << "\" y=\"" << y + 17
            << "\" font-size=\"13\" text-anchor=\"end\">" << text(s.label) << "</text>"
            << "<rect class=\"comparison-bar\" x=\"" << left << "\" y=\"" << y << "\" width=\""
            << fixed(std::max(x - left, 2.0), 2) << "\" height=\"24\" fill=\"" << colour(i)
            << "\" data-scheme=\"" << text(s.name) << "\" data-max-over-mean=\""
            << num(s.max_over_mean) << "\"/>"
            << "<text x=\"" << std::max(x, left + 2) + 6 << "\" y=\"" << y + 17
            << "\" font-size=\"13\">" << fixed(s.max_over_mean, 2) << "</text>\n";
    }
    out << "</svg>\n";
}

inline auto worst(const std::vector<double>& v) -> double {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

}  // namespace detail

/// Writes the whole page.
inline void write(std::ostream& out, const report& r) {
    using namespace detail;
    out.imbue(std::locale::classic());
    out << R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>skew: )"
        << text(r.source) << R"(</title>
<style>
body { font-family: sans-serif; color: #222; background: #fff; margin: 24px; max-width: 1080px; }
h1 { font-size: 22px; margin: 0 0 6px; } h2 { font-size: 18px; margin: 28px 0 6px; }
h3 { font-size: 15px; margin: 14px 0 4px; }
p, td, th { font-size: 13px; line-height: 1.45; } p { margin: 4px 0; }
table { border-collapse: collapse; margin: 6px 0; } td, th { padding: 3px 10px; text-align: right; } td { white-space: nowrap; }
th { border-bottom: 1px solid #999; } td.key, th.key, td.name, th.name { text-align: left; }
tr:nth-child(even) td { background: #f4f4f4; }
.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 6px; }
.muted { color: #666; } section.scheme { border-top: 1px solid #ccc; margin-top: 18px; }
</style></head>
<body>
)";
    out << "<h1>How the keys spread over " << r.partitions << " partitions</h1>\n";
    out << "<p id=\"input\" data-source=\"" << text(r.source) << "\" data-events=\"" << r.events
        << "\" data-distinct-keys=\"" << r.distinct_keys << "\" data-skipped=\"" << r.skipped
        << "\" data-partitions=\"" << r.partitions << "\" data-windows=\"" << r.windows
        << "\" data-window-seconds=\"" << num(r.window_seconds) << "\">" << grouped(r.events)
        << " events, " << grouped(r.distinct_keys) << " distinct keys, " << r.partitions
        << " partitions, " << r.windows << " window" << (r.windows == 1 ? "" : "s") << " of "
        << num(r.window_seconds) << " s. Input: " << text(r.source);
    if (r.skipped != 0) out << " (" << grouped(r.skipped) << " empty lines or keys skipped)";
    out << ".</p>\n";

    out << "<h2>Busiest partition against the mean</h2>\n"
           "<p class=\"muted\">Load of the busiest partition over the whole input, divided by "
           "the mean load (1 is a perfectly even spread; log scale).</p>\n";
    draw_comparison(out, r);
    out << "<table id=\"summary\"><tr><th class=\"name\">scheme</th><th>busiest / mean</th>"
           "<th>worst window</th><th>keys split</th><th>their events</th>"
           "<th>events off their key's partition</th><th>events with ordering stamps</th>"
           "<th>state</th></tr>\n";
    for (std::size_t i = 0; i < r.schemes.size(); ++i) {
        const scheme& s = r.schemes[i];
        out << "<tr data-scheme=\"" << text(s.name)
            << "\"><td class=\"name\"><span class=\"swatch\" "
            << "style=\"background:" << colour(i) << "\"></span>" << text(s.label) << "</td>"
            << "<td data-max-over-mean=\"" << num(s.max_over_mean) << "\">"
            << fixed(s.max_over_mean, 2) << "</td><td>" << fixed(worst(s.window_max_over_mean), 2)
            << "</td><td data-split-keys=\"" << s.split_keys << "\">" << grouped(s.split_keys)
            << "</td><td data-split-key-event-share=\"" << num(s.split_key_event_share) << "\">"
            << percent(s.split_key_event_share) << "</td><td data-moved-share=\""
            << num(s.moved_share) << "\">" << percent(s.moved_share) << "</td>";
        if (s.has_stamps) {
            out << "<td data-stamped-share=\"" << num(s.stamped_share) << "\">"
                << percent(s.stamped_share) << "</td>";
        } else {
            out << "<td>none</td>";
        }
        out << "<td data-memory-bytes=\"" << s.memory_bytes << "\">"
            << grouped(s.memory_bytes / 1024) << " KiB</td></tr>\n";
    }
    out << "</table>\n";

    if (!r.hot_keys.empty()) {
        out << "<h2>The hottest keys</h2>\n<p class=\"muted\">Each key's events, and how many "
               "partitions each scheme sent them to.</p>\n<table id=\"hot-keys\"><tr>"
               "<th class=\"key\">key</th><th>events</th><th>share</th>";
        for (std::size_t i = 0; i < r.schemes.size(); ++i) {
            out << "<th><span class=\"swatch\" style=\"background:" << colour(i) << "\"></span>"
                << text(r.schemes[i].label) << "</th>";
        }
        out << "</tr>\n";
        for (std::size_t h = 0; h < r.hot_keys.size(); ++h) {
            const hot_key& k = r.hot_keys[h];
            out << "<tr class=\"hot-key\" data-key=\"" << text(k.key) << "\" data-events=\""
                << k.events << "\" data-share=\"" << num(k.share) << "\"><td class=\"key\">"
                << short_text(k.key, 48) << "</td><td>" << grouped(k.events) << "</td><td>"
                << percent(k.share) << "</td>";
            for (const scheme& s : r.schemes) {
                const std::uint32_t used =
                    h < s.hot_key_partitions.size() ? s.hot_key_partitions[h] : 0;
                out << "<td data-scheme=\"" << text(s.name) << "\" data-partitions-used=\"" << used
                    << "\">" << used << "</td>";
            }
            out << "</tr>\n";
        }
        out << "</table>\n";
    }

    for (std::size_t i = 0; i < r.schemes.size(); ++i) {
        const scheme& s = r.schemes[i];
        const double mean = r.partitions == 0 ? 1.0 : static_cast<double>(r.events) / r.partitions;
        out << "<section class=\"scheme\" id=\"scheme-" << text(s.name) << "\" data-scheme=\""
            << text(s.name) << "\">\n<h2><span class=\"swatch\" style=\"background:" << colour(i)
            << "\"></span>" << text(s.label) << "</h2>\n<p>" << text(s.description) << "</p>\n";
        if (!s.note.empty()) out << "<p class=\"muted\">" << text(s.note) << "</p>\n";
        out << "<p class=\"order\"><b>Order:</b> " << text(s.order) << "</p>\n";
        if (!s.state.empty()) out << "<p><b>State:</b> " << text(s.state) << "</p>\n";
        out << "<h3>Load per partition, whole input (busiest: " << fixed(s.max_over_mean, 2)
            << " x the mean)</h3>\n";
        bar_chart loads;
        loads.cls = "partition-bar";
        loads.what = "partition";
        loads.unit = "x mean";
        loads.fill = colour(i);
        draw_bars(
            out, loads, s.load, 1 / mean,
            " data-scheme=\"" + text(s.name) + "\" data-partition-load=\"" + list(s.load) + "\"",
            [](std::size_t p) { return std::to_string(p); });
        out << "<h3>Busiest partition against the mean, per window (worst: "
            << fixed(worst(s.window_max_over_mean), 2) << ")</h3>\n";
        bar_chart windows;
        windows.cls = "window-bar";
        windows.what = "window";
        windows.unit = "busiest / mean";
        windows.fill = colour(i);
        windows.height = 160;
        windows.max_bars = 240;
        windows.reference_label = "even";
        const std::vector<std::uint64_t>& index = s.window_index;
        draw_bars(out, windows, s.window_max_over_mean, 1.0,
                  " data-scheme=\"" + text(s.name) + "\" data-max-over-mean-by-window=\"" +
                      list(s.window_max_over_mean) + "\" data-window-index=\"" + list(index) + "\"",
                  [&](std::size_t w) { return std::to_string(w < index.size() ? index[w] : w); });
        out << "</section>\n";
    }
    out << "<p class=\"muted\">Written by keyroute's skew tool (examples/skew.cpp). Keys that "
           "are not UTF-8 or hold control characters are shown with U+FFFD in their place; "
           "skew --json has their bytes.</p>\n</body></html>\n";
}

}  // namespace skew_html
