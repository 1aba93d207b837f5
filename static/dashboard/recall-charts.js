/* The recall page's graphs, drawn with the vendored Chart.js from the numbers the
 * server put in <script type="application/json" id="recall-series"> — the same
 * numbers the page shows as a table, so nothing depends on this file.
 * Runs on page load and again whenever htmx swaps the recall region in.
 *
 * Readable on purpose: each chart spans the page, both axes say what they count and in
 * which unit, bucket labels are thinned evenly rather than dropped at random, a bucket
 * without recalls is marked apart from one at 0 %, a bucket of only a few recalls is
 * drawn pale and its tooltip gives counts ("1 of 1 truncated"), not a bare 100 %. */
(function () {
  "use strict";

  var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  var drawn = 0;
  var colors = {
    accent: "#1f5fbf", accentPale: "rgba(31, 95, 191, 0.35)",
    muted: "#5b6673", empty: "#9aa4b0",
    warn: "#a23a1d", warnPale: "rgba(162, 58, 29, 0.35)",
    budget: "#7a5b00",
  };

  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

  // at most about one label per 95 px (a "05-12 18:00" label is about 80), evenly spaced, always the first and the last
  function thinned(labels, canvas) {
    var room = Math.max(2, Math.floor((canvas.parentNode.clientWidth || 600) / 95));
    var step = Math.max(1, Math.ceil(labels.length / room));
    var last = labels.length - 1;
    return function (value, index) {
      // the last label always; a thinned one too close to it gives way
      if (index === last) return labels[index];
      return index % step === 0 && last - index >= step ? labels[index] : "";
    };
  }

  function base(data, canvas, yTitle, max) {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: still ? false : { duration: 250 },
      spanGaps: false,
      interaction: { mode: "index", intersect: false },
      plugins: {
        legend: { position: "bottom", labels: { usePointStyle: true, boxWidth: 24, boxHeight: 10 } },
        tooltip: {
          // the "no recalls" mark is said in the title already
          filter: function (item) { return item.dataset.label !== "no recalls"; },
          callbacks: {
            title: function (items) { return items.length ? items[0].label + " UTC" : ""; },
            afterTitle: function (items) {
              if (!items.length) return "";
              var n = data.recalls[items[0].dataIndex];
              return n ? plural(n, "recall", "recalls") : "no recalls";
            },
          },
        },
      },
      scales: {
        x: {
          title: { display: true, text: "time (UTC), one bar per " + data.bucket },
          ticks: { autoSkip: false, maxRotation: 0, callback: thinned(data.labels, canvas) },
        },
        y: { beginAtZero: true, max: max, grace: max ? 0 : "8%", title: { display: true, text: yTitle } },
      },
    };
  }

  function pale(data, strong, weak) {
    return data.recalls.map(function (n) { return n && n < data.small_sample ? weak : strong; });
  }

  // a mark on the axis where a bucket had no recalls at all
  function noRecalls(data) {
    return {
      type: "line",
      label: "no recalls",
      data: data.empty.map(function (empty) { return empty ? 0 : null; }),
      showLine: false,
      pointStyle: "crossRot",
      pointRadius: 5,
      borderColor: colors.empty,
      backgroundColor: colors.empty,
      order: 0,
    };
  }

  function draw(canvas, config) {
    var existing = window.Chart.getChart(canvas);
    if (existing) existing.destroy();
    return new window.Chart(canvas, config);
  }

  function render(root) {
    var source = root.querySelector ? root.querySelector("#recall-series") : null;
    if (!source || !window.Chart) return;
    var data = JSON.parse(source.textContent);
    var charts = {
      records: document.getElementById("chart-records"),
      chars: document.getElementById("chart-chars"),
      truncation: document.getElementById("chart-truncation"),
    };
    if (charts.records) {
      var records = base(data, charts.records, "records per recall (mean)");
      records.plugins.tooltip.callbacks.label = function (item) {
        return item.formattedValue + " records per recall";
      };
      draw(charts.records, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [
            { label: "records injected per recall (mean)", data: data.records, backgroundColor: pale(data, colors.accent, colors.accentPale), pointStyle: "rect", order: 1 },
            noRecalls(data),
          ],
        },
        options: records,
      });
    }
    if (charts.chars) {
      var chars = base(data, charts.chars, "characters per recall");
      chars.plugins.tooltip.callbacks.label = function (item) {
        return item.dataset.label + ": " + item.formattedValue + " characters";
      };
      draw(charts.chars, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [
            { label: "characters per recall (mean)", data: data.chars, backgroundColor: pale(data, colors.accent, colors.accentPale), pointStyle: "rect", order: 3 },
            { type: "line", label: "largest block", data: data.max_chars, showLine: false, pointStyle: "rectRot", pointRadius: 5, borderColor: colors.muted, backgroundColor: colors.muted, order: 2 },
            // the budget is a level, not a measurement: drawn across buckets without recalls too
            { type: "line", label: "budget", data: data.budget, spanGaps: true, borderColor: colors.budget, backgroundColor: colors.budget, borderWidth: 2, borderDash: [8, 4], pointRadius: data.labels.length === 1 ? 12 : 0, pointBorderWidth: 3, pointStyle: "line", order: 1 },
            noRecalls(data),
          ],
        },
        options: chars,
      });
    }
    if (charts.truncation) {
      var truncation = base(data, charts.truncation, "% of recalls truncated", 100);
      truncation.plugins.tooltip.callbacks.label = function (item) {
        var n = data.recalls[item.dataIndex];
        var cut = data.truncated[item.dataIndex];
        var counts = cut + " of " + n + " truncated";
        return n < data.small_sample ? counts : counts + " (" + item.formattedValue + " %)";
      };
      draw(charts.truncation, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [
            // minBarLength: a bucket at 0 % still shows a sliver on the axis; one without recalls shows ×
            { label: "recalls truncated (%)", data: data.truncation, backgroundColor: pale(data, colors.warn, colors.warnPale), minBarLength: 2, pointStyle: "rect", order: 1 },
            noRecalls(data),
          ],
        },
        options: truncation,
      });
    }
    // how many times the graphs were drawn (page load, then each htmx swap): tests wait on it
    drawn += 1;
    document.documentElement.setAttribute("data-charts", String(drawn));
  }

  document.addEventListener("DOMContentLoaded", function () { render(document); });
  // after htmx swaps the recall region in (the swapped element may be a new node)
  document.addEventListener("htmx:afterSettle", function () { render(document); });
})();
