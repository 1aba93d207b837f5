/* What it learned: promotions and demotions per bucket, drawn with the vendored Chart.js
 * from <script type="application/json" id="learned-series"> — the numbers the page shows
 * as a table, so nothing depends on this file. Drawn on load and after every htmx swap. */
(function () {
  "use strict";

  var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  function thinned(labels, canvas) {
    var room = Math.max(2, Math.floor((canvas.parentNode.clientWidth || 600) / 70));
    var step = Math.max(1, Math.ceil(labels.length / room));
    return function (value, index) {
      return index % step === 0 || index === labels.length - 1 ? labels[index] : "";
    };
  }

  function render(root) {
    var source = root.querySelector ? root.querySelector("#learned-series") : null;
    var canvas = document.getElementById("chart-learned");
    if (!source || !canvas || !window.Chart) return;
    var data = JSON.parse(source.textContent);
    var existing = window.Chart.getChart(canvas);
    if (existing) existing.destroy();
    new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [
          { label: "promoted", data: data.promoted, backgroundColor: "#1e7a3c", stack: "changes" },
          { label: "demoted", data: data.demoted, backgroundColor: "#a23a1d", stack: "changes" },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: still ? false : { duration: 250 },
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { position: "bottom" },
          tooltip: { callbacks: { title: function (items) { return items.length ? items[0].label + " UTC" : ""; } } },
        },
        scales: {
          x: {
            stacked: true,
            title: { display: true, text: "time (UTC), one bar per " + data.bucket },
            ticks: { autoSkip: false, maxRotation: 0, callback: thinned(data.labels, canvas) },
          },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "learnings" } },
        },
      },
    });
    document.documentElement.setAttribute("data-learned-chart", "drawn");
  }

  document.addEventListener("DOMContentLoaded", function () { render(document); });
  document.addEventListener("htmx:afterSettle", function () { render(document); });
})();
