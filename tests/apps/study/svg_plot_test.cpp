// SPDX-License-Identifier: MIT
// SVG bar charts for study reports: well-formed XML (own tag scanner, plus python3's parser when
// available), one bar per finite value, nice tick values, escaping, the all-zero case of a
// deterministic study, error bars, infinities, log axes, determinism and argument errors.
#include "apps/study/svg_plot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/errors.h"

namespace dt::plot {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Attrs = std::map<std::string, std::string>;

std::size_t count(const std::string& s, const std::string& needle) {
    std::size_t n = 0;
    for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
    return n;
}

// Empty when every tag is closed in order, attributes are quoted and every '&' starts one of the
// five predefined entities; else what is wrong and where.
std::string xml_problem(const std::string& s) {
    std::vector<std::string> open;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '&') {
            bool known = false;
            for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
                known = known || s.compare(i, std::string(e).size(), e) == 0;
            }
            if (!known) return "bare '&' at " + std::to_string(i);
        }
        if (s[i] == '>') return "bare '>' at " + std::to_string(i);
        if (s[i] != '<') continue;
        if (s.compare(i, 2, "<?") == 0) {
            i = s.find("?>", i);
            if (i == std::string::npos) return "unterminated <?";
            ++i;
            continue;
        }
        bool quoted = false;
        std::size_t j = i + 1;
        for (; j < s.size() && (quoted || s[j] != '>'); ++j) {
            if (s[j] == '"') quoted = !quoted;
            if (!quoted && s[j] == '<') return "'<' inside a tag at " + std::to_string(j);
        }
        if (j == s.size()) return "unterminated tag at " + std::to_string(i);
        const std::string tag = s.substr(i + 1, j - i - 1);
        const bool closing = tag[0] == '/', self = tag.back() == '/';
        const std::string name = tag.substr(closing, tag.find_first_of(" /", closing) - closing);
        if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) {
            return "bad tag '" + tag + "'";
        }
        if (closing) {
            if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
            open.pop_back();
        } else if (!self) {
            open.push_back(name);
        }
        i = j;
    }
    return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

void expect_well_formed(const std::string& svg) {
    EXPECT_EQ(xml_problem(svg), "") << svg;
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) return;  // optional second check
    // One file per process and call: ctest runs the tests of this file in parallel processes.
    static int calls = 0;
    const std::string path = ::testing::TempDir() + "svg_plot_test_" + std::to_string(::getpid()) +
                             "_" + std::to_string(calls++) + ".svg";
    std::ofstream(path, std::ios::binary) << svg;
    const std::string cmd =
        "python3 -c \"import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])\" " + path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "python3 minidom rejects:\n" << svg;
    std::remove(path.c_str());
}

// Attributes of every <tag ...> whose class is `cls`.
std::vector<Attrs> elements(const std::string& svg, const std::string& tag,
                            const std::string& cls) {
    std::vector<Attrs> out;
    const std::regex tag_re("<" + tag + "\\b([^>]*)>"), attr_re("([\\w-]+)=\"([^\"]*)\"");
    for (std::sregex_iterator it(svg.begin(), svg.end(), tag_re), end; it != end; ++it) {
        Attrs a;
        const std::string body = (*it)[1];
        for (std::sregex_iterator at(body.begin(), body.end(), attr_re); at != end; ++at) {
            a[(*at)[1]] = (*at)[2];
        }
        if (a["class"] == cls) out.push_back(a);
    }
    return out;
}

// Text content (up to the first '<') of every <text> of class `cls`.
std::vector<std::string> texts(const std::string& svg, const std::string& cls) {
    std::vector<std::string> out;
    const std::regex re("<text [^>]*class=\"" + cls + "\"[^>]*>([^<]*)<");
    for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
        out.push_back((*it)[1]);
    }
    return out;
}

double number(const std::string& s) {  // locale-independent, whole string or NaN
    double v = kNaN;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() ? v : kNaN;
}

BarChart study_chart() {  // Figure 2 of Zhuang et al. 2021 in miniature
    BarChart c;
    c.title = "Stability per noise source";
    c.x_label = "noise variant";
    c.y_label = "stddev of accuracy (%)";
    c.categories = {"all", "init", "shuffle", "augment", "cuDNN"};
    c.series = {{"stddev", {0.21, 0.19, 0.18, 0.2, 0.17}, {0.02, 0.03, 0.01, 0.02, 0.02}},
                {"churn", {11.2, 10.8, 10.1, 9.9, 9.5}, {}},
                {"l2 distance", {19.5, 18.2, 17.9, 18.8, 15.1}, {}}};
    c.reference_lines = {{"all (top line)", 0.21}};
    return c;
}

TEST(SvgPlot, IsWellFormedStandaloneSvg) {
    const std::string svg = bar_chart_svg(study_chart(), 720, 420);
    expect_well_formed(svg);
    EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
    EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
    EXPECT_NE(svg.find("width=\"720\" height=\"420\" viewBox=\"0 0 720 420\""), std::string::npos);
    EXPECT_EQ(texts(svg, "title"), std::vector<std::string>{"Stability per noise source"});
    EXPECT_EQ(texts(svg, "xlabel"), std::vector<std::string>{"noise variant"});
    EXPECT_EQ(count(svg, "class=\"ylabel\""), 1u);
    EXPECT_EQ(texts(svg, "cat"),
              (std::vector<std::string>{"all", "init", "shuffle", "augment", "cuDNN"}));
    EXPECT_EQ(texts(svg, "legend"), (std::vector<std::string>{"stddev", "churn", "l2 distance"}));
    EXPECT_EQ(count(svg, "class=\"ref\""), 1u);
    EXPECT_EQ(svg.find("rotate(-45)"), std::string::npos) << "short labels need no rotation";
    // Every bar carries a tooltip with its exact value.
    EXPECT_NE(svg.find("<title>churn / shuffle: 10.1</title></rect>"), std::string::npos);
}

TEST(SvgPlot, BarCountIsCategoriesTimesSeriesMinusNaN) {
    BarChart c;
    c.categories = {"a", "b", "c", "d"};
    c.series = {{"s1", {1, kNaN, 3, 4}, {}}, {"s2", {2, 2, kNaN, 0}, {}}, {"s3", {1, 2, 3, 4}, {}}};
    const std::string svg = bar_chart_svg(c);
    EXPECT_EQ(elements(svg, "rect", "bar").size(), 4u * 3u - 2u);
    EXPECT_EQ(texts(svg, "na"), (std::vector<std::string>{"n/a", "n/a"}));
    EXPECT_NE(svg.find("<title>s1 / b: n/a</title>"), std::string::npos);
    expect_well_formed(svg);
    // Series colours differ (palette has 8 entries).
    std::map<std::string, int> fills;
    for (const Attrs& a : elements(svg, "rect", "bar")) fills[a.at("fill")]++;
    EXPECT_EQ(fills.size(), 3u);
    // One series: no legend.
    c.series.resize(1);
    EXPECT_EQ(count(bar_chart_svg(c), "class=\"legend\""), 0u);
}

// Tick labels parse, are evenly spaced by 1, 2 or 5 x 10^k, start at or below min(0, data) and
// end at or above the data maximum.
void expect_nice_ticks(const std::vector<double>& values) {
    BarChart c;
    for (std::size_t i = 0; i < values.size(); ++i) c.categories.push_back(std::to_string(i));
    c.series = {{"s", values, {}}};
    const std::string svg = bar_chart_svg(c);
    std::vector<double> t;
    for (const std::string& l : texts(svg, "tick")) t.push_back(number(l));
    SCOPED_TRACE(::testing::PrintToString(texts(svg, "tick")));
    ASSERT_GE(t.size(), 3u);
    EXPECT_LE(t.size(), 7u);
    const double step = t[1] - t[0];
    const double mant = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::fabs(mant - 1) < 1e-6 || std::fabs(mant - 2) < 1e-6 ||
                std::fabs(mant - 5) < 1e-6)
        << "step " << step;
    for (std::size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], step, step * 1e-6);
    for (double v : t) EXPECT_NEAR(v / step, std::round(v / step), 1e-6) << v;
    double lo = 0, hi = 0;
    for (double v : values) lo = std::min(lo, v), hi = std::max(hi, v);
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    EXPECT_LT(t.back() - t.front(), 3 * (hi - lo)) << "axis far wider than the data";
}

TEST(SvgPlot, TicksAreNiceNumbersCoveringTheData) {
    expect_nice_ticks({0.37, 0.1, 0.2});
    expect_nice_ticks({13, 2});
    expect_nice_ticks({0.0042, 0.001});
    expect_nice_ticks({987, 1000.5});
    expect_nice_ticks({3e-7, 1.2e-6});
    expect_nice_ticks({-3.5, 2.25});
    expect_nice_ticks({1, 1, 1});
    expect_nice_ticks({2.5e9});
}

TEST(SvgPlot, EscapesXmlSpecialCharactersEverywhere) {
    BarChart c;
    const std::string nasty = "a<b & c \"q\" 'x' >";
    c.title = c.x_label = c.y_label = nasty;
    c.categories = {nasty, "ok"};
    c.series = {{nasty, {1, 2}, {}}, {"other", {2, 1}, {}}};
    c.reference_lines = {{nasty, 1.5}};
    const std::string svg = bar_chart_svg(c);
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
    EXPECT_EQ(svg.find("& c"), std::string::npos);
    const std::string escaped = "a&lt;b &amp; c &quot;q&quot; &apos;x&apos; &gt;";
    EXPECT_GE(count(svg, escaped), 7u);  // title, axis labels, category, legend, tooltips, ref
    expect_well_formed(svg);
}

TEST(SvgPlot, AllZeroDataStillHasASensibleAxis) {
    // A deterministic study: every stddev is exactly 0, error bars too.
    BarChart c;
    c.categories = {"all", "init", "shuffle"};
    c.series = {{"stddev", {0, 0, 0}, {0, 0, 0}}, {"churn", {0, -0.0, 0}, {}}};
    c.reference_lines = {{"top line", 0}};
    const std::string svg = bar_chart_svg(c);
    for (const char* bad : {"nan", "NaN", "inf", "Inf"}) EXPECT_EQ(count(svg, bad), 0u) << bad;
    const auto ticks = texts(svg, "tick");
    ASSERT_GE(ticks.size(), 3u);
    EXPECT_EQ(number(ticks.front()), 0.0) << ticks.front();
    EXPECT_EQ(number(ticks.back()), 1.0) << ticks.back();
    const auto bars = elements(svg, "rect", "bar");
    ASSERT_EQ(bars.size(), 6u);
    for (const Attrs& b : bars) {
        EXPECT_TRUE(std::isfinite(number(b.at("y"))));
        EXPECT_GE(number(b.at("height")), 1.0) << "a zero bar must stay visible";
    }
    EXPECT_EQ(texts(svg, "value"), std::vector<std::string>(6, "0"));
    expect_well_formed(svg);
}

TEST(SvgPlot, ErrorBarsAppearWhenGiven) {
    BarChart c;
    c.categories = {"a", "b", "c"};
    c.series = {{"s", {1, 2, 3}, {}}};
    EXPECT_EQ(count(bar_chart_svg(c), "class=\"err\""), 0u);
    c.series[0].errors = {0.5, kNaN, 0.25};  // a NaN error (one run) draws no bar
    const std::string svg = bar_chart_svg(c);
    const auto err = elements(svg, "path", "err");
    ASSERT_EQ(err.size(), 2u);
    // The error bar spans more than the bar top: its path covers value +- error.
    const auto bars = elements(svg, "rect", "bar");
    const std::regex v_re("V(-?[0-9.]+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(err[0].at("d"), m, v_re));
    EXPECT_LT(number(m[1]), number(bars[0].at("y"))) << "upper end above the bar top";
    // The axis makes room for the upper end (3 + 0.25 > 3).
    EXPECT_GE(number(texts(svg, "tick").back()), 3.25);
    expect_well_formed(svg);
}

TEST(SvgPlot, InfiniteValuesAreClampedAndMarked) {
    BarChart c;
    c.categories = {"a", "b", "c"};
    c.series = {{"s", {1, kInf, -kInf}, {0.1, 0.1, 0.1}}};
    const std::string svg = bar_chart_svg(c);
    EXPECT_EQ(elements(svg, "rect", "bar").size(), 3u);
    EXPECT_EQ(texts(svg, "inf"), (std::vector<std::string>{"+inf", "-inf"}));
    EXPECT_EQ(elements(svg, "path", "err").size(), 1u);
    for (const Attrs& b : elements(svg, "rect", "bar")) {
        EXPECT_TRUE(std::isfinite(number(b.at("y"))) && std::isfinite(number(b.at("height"))));
    }
    EXPECT_LE(number(texts(svg, "tick").back()), 2.0) << "infinity must not stretch the axis";
    expect_well_formed(svg);
}

TEST(SvgPlot, LogAxisUsesDecadesAndMarksNonPositiveValues) {
    BarChart c;
    c.log_y = true;
    c.categories = {"a", "b", "c", "d"};
    c.series = {{"s", {0.002, 0.5, 30, 0}, {}}};
    const std::string svg = bar_chart_svg(c);
    EXPECT_EQ(texts(svg, "tick"),
              (std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10", "100"}));
    EXPECT_EQ(elements(svg, "rect", "bar").size(), 3u);
    EXPECT_EQ(texts(svg, "na"), std::vector<std::string>{"&lt;=0"});
    expect_well_formed(svg);
}

TEST(SvgPlot, RotatesCategoryLabelsThatWouldOverlap) {
    BarChart c;
    for (int i = 0; i < 12; ++i)
        c.categories.push_back("class " + std::to_string(i) + " (airplane)");
    c.series = {{"per-class stddev", std::vector<double>(12, 1.5), {}}};
    c.reference_lines = {{"top-line stddev", 0.4}};
    const std::string svg = bar_chart_svg(c);
    EXPECT_EQ(count(svg, "rotate(-45)\">class "), 12u);
    expect_well_formed(svg);
    // Very many categories: vertical labels, thinned out so they cannot overlap.
    c.categories.clear();
    // (append, not "c" + ...: GCC 12 -O3 warns falsely about that, PR 105329)
    for (int i = 0; i < 100; ++i)
        c.categories.push_back(std::string("c").append(std::to_string(i)));
    c.series = {{"s", std::vector<double>(100, 1.0), {}}};
    const std::string many = bar_chart_svg(c);
    EXPECT_GT(count(many, "rotate(-90)\">c"), 10u);
    EXPECT_LT(count(many, "rotate(-90)\">c"), 100u);
    EXPECT_EQ(elements(many, "rect", "bar").size(), 100u);
}

TEST(SvgPlot, OutputIsDeterministicAndLocaleIndependent) {
    const std::string a = bar_chart_svg(study_chart());
    EXPECT_EQ(a, bar_chart_svg(study_chart()));
    BarChart other = study_chart();
    other.series[1].values[2] = 10.2;
    EXPECT_NE(a, bar_chart_svg(other));
    // A decimal-comma locale must not leak into numbers (skipped when none is installed).
    for (const char* loc : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
        if (std::setlocale(LC_ALL, loc) == nullptr) continue;
        const std::string b = bar_chart_svg(study_chart());
        std::setlocale(LC_ALL, "C");
        EXPECT_EQ(a, b) << loc;
        break;
    }
}

TEST(SvgPlot, RejectsInconsistentCharts) {
    using test::has;
    const auto error_of = [](const BarChart& c) {
        return test::message_of<ValueError>([&] { bar_chart_svg(c); });
    };
    BarChart c = study_chart();
    c.series[1].values.pop_back();
    EXPECT_TRUE(has(error_of(c), "'churn' has 4 values but there are 5 categories"));
    c = study_chart();
    c.series[0].errors = {0.1, 0.2};
    EXPECT_TRUE(has(error_of(c), "'stddev' has 2 errors but there are 5 categories"));
    c = study_chart();
    c.series[0].errors[3] = -0.1;
    EXPECT_TRUE(has(error_of(c), "augment"));
    c = study_chart();
    c.categories.clear();
    for (auto& s : c.series) s.values.clear(), s.errors.clear();
    EXPECT_TRUE(has(error_of(c), "no categories"));
    c = study_chart();
    c.series.clear();
    EXPECT_TRUE(has(error_of(c), "no series"));
    EXPECT_TRUE(has(test::message_of<ValueError>([] { bar_chart_svg(study_chart(), 100, 50); }),
                    "too small"));
}

}  // namespace
}  // namespace dt::plot
