// SPDX-License-Identifier: MIT
// Bar chart -> SVG text. Layout is computed from estimated text widths (0.6 em per code point),
// never from font metrics, so the output depends only on the input.
#include "apps/study/svg_plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "engine/core/error.h"

namespace dt::plot {
namespace {

// Okabe & Ito (2008) colour-blind-safe palette. Yellow and black come last: yellow is faint on
// white, and black is close to the error-bar colour.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                    "#56B4E9", "#D55E00", "#F0E442", "#000000"};
constexpr double kFont = 11;            // ticks, categories, legend, axis labels
constexpr double kSmallFont = 9;        // value labels and markers
constexpr double kCharW = 0.6 * kFont;  // estimated advance of one glyph
constexpr double kSin45 = 0.70710678118654752;

std::string esc(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    constexpr std::string_view kSpecial = "&<>\"'";
    constexpr const char* kEntity[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (char ch : s) {
        const auto u = static_cast<unsigned char>(ch);
        if (const auto k = kSpecial.find(ch); k != std::string_view::npos) {
            out += kEntity[k];
        } else {  // XML 1.0 forbids control characters even as references, tab/newline excepted
            out += (u < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') ? '?' : ch;
        }
    }
    return out;
}

std::size_t glyphs(const std::string& s) {  // UTF-8 code points: skip continuation bytes
    return static_cast<std::size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string truncate_glyphs(const std::string& s, std::size_t n) {  // n >= 3; ends in "..."
    if (glyphs(s) <= n) return s;
    std::size_t seen = 0, i = 0;
    for (; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == n - 3) break;
    }
    return s.substr(0, i) + "...";
}

// ---- numbers (std::to_chars: locale-independent, deterministic) ----

template <typename... Fmt>
std::string chars(double v, Fmt... fmt) {
    char buf[512];  // fixed notation of |v| <= 1e300 with <= 17 decimals fits
    const auto r = std::to_chars(buf, buf + sizeof buf, v, fmt...);
    DT_CHECK(r.ec == std::errc(), "svg_plot: cannot format ", v);
    return std::string(buf, r.ptr);
}

std::string coord(double v) {  // pixel coordinate: 2 decimals, trailing zeros trimmed
    DT_CHECK(std::isfinite(v), "svg_plot: internal error: non-finite coordinate");
    std::string s = chars(v, std::chars_format::fixed, 2);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

// Tooltips: the shortest text that reads back as v.
std::string exact(double v) { return std::isnan(v) ? "n/a" : chars(v); }

std::string short3(double v) {  // value labels; -0 reads as 0 (tooltips keep the sign)
    if (v == 0 || std::isinf(v)) return v == 0 ? "0" : v > 0 ? "+inf" : "-inf";
    return chars(v, std::chars_format::general, 3);
}

std::string int_text(int v) { return std::to_string(v); }  // %d: no locale-dependent grouping

struct Scale {
    bool log = false;
    double lo = 0, hi = 1;  // axis range; decade exponents when log
    std::vector<double> ticks;
    std::vector<std::string> labels;
    double top = 0, bottom = 0;  // pixel rows of hi and lo

    // Pixel row of value v (v > 0 when log), clamped into the axis so infinities hit an edge.
    double y(double v) const {
        const double a = std::clamp(log ? std::log10(v) : v, lo, hi);
        return bottom - (a - lo) / (hi - lo) * (bottom - top);
    }
};

Scale linear_scale(const std::vector<double>& data) {
    Scale s;
    double lo = 0, hi = 0;  // bars grow from 0, so 0 is always on the axis
    for (double v : data) {
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    lo = std::max(lo, -1e300), hi = std::min(hi, 1e300);  // keep hi - lo finite
    if (hi - lo < 1e-300) hi = lo + 1;  // all zero (a deterministic study): plain 0..1 axis
    // Step 1, 2 or 5 x 10^e giving about 5 intervals.
    const double raw = (hi - lo) / 5;
    int e = static_cast<int>(std::floor(std::log10(raw)));
    const double f = raw / std::pow(10.0, e);
    int mult = f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10;
    if (mult == 10) mult = 1, ++e;
    const double step = mult * std::pow(10.0, e);
    const auto k0 = static_cast<int64_t>(std::floor(lo / step + 1e-12));
    const auto k1 = static_cast<int64_t>(std::ceil(hi / step - 1e-12));
    s.lo = static_cast<double>(k0) * step;
    s.hi = static_cast<double>(k1) * step;
    const double maxabs = std::max(std::fabs(s.lo), std::fabs(s.hi));
    for (int64_t k = k0; k <= k1; ++k) {
        const double t = static_cast<double>(k) * step;  // k * step: no accumulated drift
        s.ticks.push_back(t);
        if (e >= -4 && maxabs < 1e7) {  // plain decimals: exactly as many as the step needs
            s.labels.push_back(chars(t, std::chars_format::fixed, std::max(0, -e)));
        } else {
            const int digits = static_cast<int>(std::floor(std::log10(maxabs))) - e + 1;
            s.labels.push_back(chars(t, std::chars_format::general, std::clamp(digits, 1, 17)));
        }
    }
    return s;
}

Scale log_scale(const std::vector<double>& data) {
    Scale s;
    s.log = true;
    double mn = HUGE_VAL, mx = 0;
    for (double v : data) {
        if (std::isfinite(v) && v > 0) mn = std::min(mn, v), mx = std::max(mx, v);
    }
    int e0 = 0, e1 = 1;  // no positive data: 1..10
    if (mx > 0) {
        e0 = static_cast<int>(std::floor(std::log10(mn)));
        e1 = std::max(e0 + 1, static_cast<int>(std::ceil(std::log10(mx))));
    }
    const int stride = (e1 - e0 + 5) / 6;  // at most ~6 decade ticks
    e1 = e0 + (e1 - e0 + stride - 1) / stride * stride;
    s.lo = e0, s.hi = e1;
    for (int k = e0; k <= e1; k += stride) {
        s.ticks.push_back(std::pow(10.0, k));
        s.labels.push_back(k >= -4 && k <= 6
                               ? chars(std::pow(10.0, k), std::chars_format::fixed, std::max(0, -k))
                               : "1e" + int_text(k));
    }
    return s;
}

struct Out {
    std::string s;
    void text(double x, double y, const std::string& body, const std::string& attrs) {
        s += "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\"" + attrs + ">" + body +
             "</text>\n";
    }
    void line(double x1, double y1, double x2, double y2, const std::string& attrs) {
        s += "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) +
             "\" y2=\"" + coord(y2) + "\"" + attrs + "/>\n";
    }
    // Leaves the tag open after `attrs` so the caller can close it or add a <title>.
    void rect(double x, double y, double w, double h, const std::string& attrs) {
        s += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) +
             "\" height=\"" + coord(h) + "\"" + attrs;
    }
};

std::string colour(std::size_t series) { return kPalette[series % std::size(kPalette)]; }

// Value labels and markers: small grey text centred on the bar (font size is kSmallFont).
constexpr const char* kSmallAttrs = " font-size=\"9\" fill=\"#666666\" text-anchor=\"middle\"";

void validate(const BarChart& c, int width, int height) {
    const std::string chart = "bar chart '" + c.title + "': ";
    DT_CHECK_VALUE(!c.categories.empty(), chart, "no categories; add at least one group along x");
    DT_CHECK_VALUE(!c.series.empty(), chart, "no series; add one with a value per category");
    DT_CHECK_VALUE(width >= 240 && height >= 180, chart, "size ", width, "x", height,
                   " is too small; use at least 240x180");
    const std::size_t n = c.categories.size();
    for (const Series& s : c.series) {
        DT_CHECK_VALUE(s.values.size() == n, chart, "series '", s.name, "' has ", s.values.size(),
                       " values but there are ", n, " categories; give one value per category");
        DT_CHECK_VALUE(s.errors.empty() || s.errors.size() == n, chart, "series '", s.name,
                       "' has ", s.errors.size(), " errors but there are ", n,
                       " categories; give one error per category or none");
        for (std::size_t i = 0; i < s.errors.size(); ++i) {
            DT_CHECK_VALUE(!(s.errors[i] < 0), chart, "series '", s.name, "' has error ",
                           s.errors[i], " for '", c.categories[i], "'; errors must be >= 0");
        }
    }
}

// Where everything goes, from estimated text sizes; the plot rows are sc.top / sc.bottom.
struct Layout {
    double left = 0, right = 0, title_y = 0;        // plot area columns, title baseline
    std::vector<std::pair<double, double>> legend;  // top-left corner of each series' swatch
    double group_w = 0;                             // width of one category
    int angle = 0;                                  // category label rotation: 0, 45 or 90 degrees
    std::size_t label_chars = 0;                    // longer category labels are shortened to this
    std::size_t label_every = 1;  // draw every n-th category label when even 90 degrees crowd
};

Layout layout(const BarChart& chart, Scale& sc, double W, double H) {
    Layout L;
    std::size_t tick_chars = 0;
    for (const auto& l : sc.labels) tick_chars = std::max(tick_chars, l.size());
    L.left = 10 + (chart.y_label.empty() ? 0 : 18) + tick_chars * kCharW + 10;
    L.right = W - 16;
    double cursor = 8;
    L.title_y = cursor + 16;
    if (!chart.title.empty()) cursor += 26;
    if (chart.series.size() > 1) {  // left-to-right items, wrapped into rows of the plot width
        double x = L.left;
        cursor += 2;
        for (const Series& s : chart.series) {
            const double w = 14 + glyphs(s.name) * kCharW + 16;
            if (x > L.left && x + w > L.right) x = L.left, cursor += 16;
            L.legend.emplace_back(x, cursor);
            x += w;
        }
        cursor += 18;
    }
    sc.top = cursor + 18;  // room for value labels and "+inf" markers above the tallest bar

    const std::size_t ncat = chart.categories.size();
    L.group_w = (L.right - L.left) / static_cast<double>(ncat);
    std::size_t chars = 0;
    for (const auto& c : chart.categories) chars = std::max(chars, glyphs(c));
    // Rotate labels that would overlap: 45 degrees while neighbours stay a line apart, else 90.
    if (chars * kCharW > L.group_w - 6) L.angle = L.group_w * kSin45 >= kFont + 2 ? 45 : 90;
    const double slope = L.angle == 45 ? kSin45 : 1.0;
    // Rotated labels take at most 30% of the height; longer ones end in "...".
    const auto fit = static_cast<std::size_t>(H * 0.3 / slope / kCharW);
    L.label_chars = L.angle == 0 ? chars : std::min(chars, std::max<std::size_t>(fit, 4));
    if (L.angle == 90 && L.group_w < kFont + 1) {
        L.label_every = static_cast<std::size_t>(std::ceil((kFont + 1) / L.group_w));
    }
    const double cat_h = L.angle == 0 ? 16 : L.label_chars * kCharW * slope + 12;
    sc.bottom = H - (8 + cat_h + (chart.x_label.empty() ? 0 : 20));
    DT_CHECK_VALUE(sc.bottom - sc.top >= 40 && L.right - L.left >= 40, "bar chart '", chart.title,
                   "': ", W, "x", H, " leaves no room for the plot after title, ",
                   "legend and labels; make the chart larger or the labels shorter");
    return L;
}

// Bars with tooltips, error bars, value labels, and markers for what cannot be a bar.
void draw_bars(Out& o, const BarChart& chart, const Scale& sc, const Layout& L) {
    const double base = sc.log ? sc.bottom : sc.y(0);  // where bars start
    const std::size_t nser = chart.series.size();
    const double inner = L.group_w * (nser == 1 ? 0.6 : 0.8);
    const double slot = inner / static_cast<double>(nser);
    const double gap = std::min(2.0, slot * 0.1);
    for (std::size_t si = 0; si < nser; ++si) {
        const Series& s = chart.series[si];
        for (std::size_t c = 0; c < chart.categories.size(); ++c) {
            const double v = s.values[c];
            const double x = L.left + c * L.group_w + (L.group_w - inner) / 2 + si * slot + gap / 2;
            const double bw = slot - gap, cx = x + bw / 2;
            const std::string tip = "<title>" + esc(s.name) + " / " + esc(chart.categories[c]) +
                                    ": " + exact(v) + "</title>";
            if (std::isnan(v) || (sc.log && v <= 0)) {  // nothing to draw: say so at the baseline
                o.text(cx, base - 3, (std::isnan(v) ? "n/a" : "&lt;=0") + tip,
                       std::string(" class=\"na\"") + kSmallAttrs);
                continue;
            }
            const double yv = sc.y(v);
            // At least 1 px, so an exact zero is a visible sliver rather than a missing bar.
            const double h = std::max(1.0, std::fabs(yv - base));
            const bool up = yv <= base;
            const double top = up ? base - h : base;
            o.rect(x, top, bw, h, " class=\"bar\" fill=\"" + colour(si) + "\">");
            o.s += tip + "</rect>\n";
            if (std::isinf(v)) {  // clamped to the plot edge: mark it on the free side
                o.text(cx, v > 0 ? top - 3 : base - 3, short3(v),
                       std::string(" class=\"inf\"") + kSmallAttrs);
                continue;
            }
            double above = top, below = top + h;  // value label goes outside the error bar
            if (!s.errors.empty() && std::isfinite(s.errors[c])) {
                const double e = s.errors[c];
                const double y_hi = sc.y(v + e);
                const double y_lo = sc.log && v - e <= 0 ? sc.bottom : sc.y(v - e);
                const double cap = std::min(4.0, bw * 0.3);
                o.s += "<path class=\"err\" d=\"M" + coord(cx) + " " + coord(y_lo) + "V" +
                       coord(y_hi) + "M" + coord(cx - cap) + " " + coord(y_lo) + "H" +
                       coord(cx + cap) + "M" + coord(cx - cap) + " " + coord(y_hi) + "H" +
                       coord(cx + cap) + "\" stroke=\"#333333\" fill=\"none\"/>\n";
                above = std::min(above, y_hi), below = std::max(below, y_lo);
            }
            const std::string label = short3(v);
            if (v == 0 || glyphs(label) * 0.6 * kSmallFont <= slot + 2) {  // zero always: key case
                o.text(cx, up ? above - 3 : below + kSmallFont, esc(label),
                       std::string(" class=\"value\"") + kSmallAttrs);
            }
        }
    }
}

// Grid, ticks, axes, reference lines and every label around the plot.
void draw_frame(Out& o, const BarChart& chart, const Scale& sc, const Layout& L, double W,
                double H) {
    for (std::size_t i = 0; i < sc.ticks.size(); ++i) {
        const double y = sc.y(sc.ticks[i]);
        o.line(L.left, y, L.right, y, " stroke=\"#e0e0e0\"");
        o.line(L.left - 5, y, L.left, y, " stroke=\"#333333\"");
        o.text(L.left - 8, y + 4, esc(sc.labels[i]), " class=\"tick\" text-anchor=\"end\"");
    }
    o.line(L.left, sc.top, L.left, sc.bottom, " stroke=\"#333333\"");
    o.line(L.left, sc.bottom, L.right, sc.bottom, " stroke=\"#333333\"");
    if (!sc.log && sc.lo < 0) o.line(L.left, sc.y(0), L.right, sc.y(0), " stroke=\"#333333\"");

    for (std::size_t c = 0; c < chart.categories.size(); c += L.label_every) {
        const std::string& full = chart.categories[c];
        const std::string shown = truncate_glyphs(full, std::max<std::size_t>(L.label_chars, 4));
        const std::string body =
            esc(shown) + (shown == full ? "" : "<title>" + esc(full) + "</title>");
        const double cx = L.left + (static_cast<double>(c) + 0.5) * L.group_w;
        if (L.angle == 0) {
            o.text(cx, sc.bottom + 16, body, " class=\"cat\" text-anchor=\"middle\"");
        } else {  // anchored at its end just below the axis, reading upwards
            o.s += "<text class=\"cat\" text-anchor=\"end\" transform=\"translate(" +
                   coord(L.angle == 90 ? cx + 4 : cx) + " " + coord(sc.bottom + 10) + ") rotate(-" +
                   int_text(L.angle) + ")\">" + body + "</text>\n";
        }
    }
    if (!chart.x_label.empty()) {
        o.text((L.left + L.right) / 2, H - 8, esc(chart.x_label),
               " class=\"xlabel\" text-anchor=\"middle\"");
    }
    if (!chart.y_label.empty()) {
        o.s += "<text class=\"ylabel\" text-anchor=\"middle\" transform=\"translate(14 " +
               coord((sc.top + sc.bottom) / 2) + ") rotate(-90)\">" + esc(chart.y_label) +
               "</text>\n";
    }
    if (!chart.title.empty()) {
        o.text(W / 2, L.title_y, esc(chart.title),
               " class=\"title\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\"");
    }
    for (std::size_t si = 0; si < L.legend.size(); ++si) {
        const auto [x, y] = L.legend[si];
        o.rect(x, y, 10, 10, " class=\"swatch\" fill=\"" + colour(si) + "\"/>\n");
        o.text(x + 14, y + 9, esc(chart.series[si].name), " class=\"legend\"");
    }
}

void draw_reference_lines(Out& o, const BarChart& chart, const Scale& sc, const Layout& L) {
    for (const auto& [name, value] : chart.reference_lines) {
        if (!std::isfinite(value) || (sc.log && value <= 0)) continue;  // no place on the axis
        const double y = sc.y(value);
        o.line(L.left, y, L.right, y, " class=\"ref\" stroke=\"#555555\" stroke-dasharray=\"6 4\"");
        // The label may cross bars: a white-stroked copy underneath keeps it legible (SVG 1.1 has
        // no paint-order, so the halo is a separate element).
        const std::string attrs = " font-size=\"10\" text-anchor=\"end\"";
        o.text(L.right - 2, y - 3, esc(name),
               " class=\"refhalo\" fill=\"#ffffff\" stroke=\"#ffffff\" stroke-width=\"3\"" + attrs);
        o.text(L.right - 2, y - 3,
               esc(name) + "<title>" + esc(name) + ": " + exact(value) + "</title>",
               " class=\"reflabel\" fill=\"#555555\"" + attrs);
    }
}

}  // namespace

std::string bar_chart_svg(const BarChart& chart, int width, int height) {
    validate(chart, width, height);
    // Everything the axis must show: values, error-bar ends, reference lines.
    std::vector<double> data;
    for (const Series& s : chart.series) {
        for (std::size_t i = 0; i < s.values.size(); ++i) {  // NaN/inf ends are ignored
            const double v = s.values[i], e = s.errors.empty() ? 0 : s.errors[i];
            data.insert(data.end(), {v, v + e, v - e});
        }
    }
    for (const auto& r : chart.reference_lines) data.push_back(r.second);
    Scale sc = chart.log_y ? log_scale(data) : linear_scale(data);
    const double W = width, H = height;
    const Layout L = layout(chart, sc, W, H);

    Out o;
    const std::string w = int_text(width), h = int_text(height);
    o.s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o.s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w +
           "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
           "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"" + coord(kFont) + "\">\n";
    o.rect(0, 0, W, H, " fill=\"#ffffff\"/>\n");
    draw_frame(o, chart, sc, L, W, H);
    draw_bars(o, chart, sc, L);
    draw_reference_lines(o, chart, sc, L);  // over the bars
    o.s += "</svg>\n";
    return o.s;
}

}  // namespace dt::plot
