/* The recall page's graphs, drawn with the vendored Chart.js from the numbers the
 * server put in <script type="application/json" id="recall-series"> — the same
 * numbers the page shows as a table, so nothing depends on this file.
 * Runs on page load and again whenever htmx swaps the recall region in. */
(function () {
  "use strict";

  var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  var drawn = 0;
  var colors = { accent: "#1f5fbf", muted: "#5b6673", warn: "#a23a1d", budget: "#7a5b00" };

  function base(yTitle, max) {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: still ? false : { duration: 250 },
      spanGaps: false,
      interaction: { mode: "index", intersect: false },
      plugins: { legend: { position: "bottom" } },
      scales: {
        x: { ticks: { maxRotation: 0, autoSkip: true } },
        y: { beginAtZero: true, max: max, grace: max ? 0 : "8%", title: { display: true, text: yTitle } },
      },
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
      draw(charts.records, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [{ label: "records injected per recall (mean)", data: data.records, backgroundColor: colors.accent }],
        },
        options: base("records"),
      });
    }
    if (charts.chars) {
      draw(charts.chars, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [
            { label: "characters per recall (mean)", data: data.chars, backgroundColor: colors.accent, order: 2 },
            { type: "line", label: "largest block", data: data.max_chars, showLine: false, pointStyle: "rectRot", pointRadius: 5, borderColor: colors.muted, backgroundColor: colors.muted, order: 1 },
            // the budget is a level, not a measurement: drawn across buckets without recalls too
            { type: "line", label: "budget", data: data.budget, spanGaps: true, borderColor: colors.budget, backgroundColor: colors.budget, borderDash: [8, 4], pointRadius: 0, order: 0 },
          ],
        },
        options: base("characters"),
      });
    }
    if (charts.truncation) {
      draw(charts.truncation, {
        type: "bar",
        data: {
          labels: data.labels,
          datasets: [{ label: "recalls truncated (%)", data: data.truncation, backgroundColor: colors.warn }],
        },
        options: base("% truncated", 100),
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
