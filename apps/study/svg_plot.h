// SPDX-License-Identifier: MIT
// Dependency-free SVG bar charts for `detrain study` reports: one bar per series within each
// category, e.g. stddev / churn / weight distance per noise variant (Figure 2 of Zhuang et al.
// 2021, "Randomness in Neural Network Training") or per-class accuracy stddev with the top-line
// stddev as a reference line (their Figure 5).
//
// Output is a standalone SVG 1.1 document (UTF-8, xmlns, viewBox, width/height) that browsers
// and Markdown viewers show as is. It is byte-identical for identical input: numbers go through
// std::to_chars (never the C locale), and layout uses estimated text widths, not fonts.
//
// Data rules (a report must render whatever a study produced, so odd values are drawn, not
// rejected):
//   NaN value        no bar; a grey "n/a" marker at the baseline (and its tooltip).
//   +-infinite value bar clamped to the plot edge, marked "+inf" / "-inf"; no error bar.
//   all values zero  (a fully deterministic study) axis 0..1, every bar a 1 px sliver labelled
//                    "0", so "exactly zero" is visibly different from "missing".
//   errors           optional, same size as values; drawn as +-error bars clamped to the axis.
//                    NaN / infinite errors draw no bar; negative errors are a caller bug
//                    (ValueError).
//   reference lines  non-finite values (and values <= 0 on a log axis) are not drawn.
//   log_y            decade ticks; bars grow from the axis bottom. Values <= 0 have no logarithm:
//                    no bar, a grey "<=0" marker at the baseline (tooltip keeps the exact value).
// Value labels (3 significant digits) sit above bars when they fit; zero bars always get one.
// More than 8 series reuse the palette cyclically (the legend still tells them apart).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace dt::plot {

struct Series {
    std::string name;
    std::vector<double> values;  // one per category
    std::vector<double> errors;  // optional (empty = none): drawn as error bars (+-)
};

struct BarChart {
    std::string title, x_label, y_label;
    std::vector<std::string> categories;  // groups along x
    std::vector<Series> series;           // one bar per series within each category
    std::vector<std::pair<std::string, double>> reference_lines;  // dashed horizontal, labelled
    bool log_y = false;
};

/// Renders `chart` as an SVG document of `width` x `height` px. Throws dt::ValueError when
/// categories or series are empty, a series' values/errors size differs from the number of
/// categories (naming the series and both sizes), an error is negative, or the size is too small
/// for the chart's text (minimum 240 x 180).
std::string bar_chart_svg(const BarChart& chart, int width = 720, int height = 420);

}  // namespace dt::plot
