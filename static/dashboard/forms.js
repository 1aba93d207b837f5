/* Filter forms send only the fields that hold something: a GET form sends every field,
 * and "?q=&tag=&key=&as_of=" means nothing more than "?". (Without JavaScript the
 * server redirects such a URL to its short form.) */
(function () {
  "use strict";
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.verb !== "get") return;
    var data = event.detail.formData;
    if (!data || !data.keys) return;
    Array.from(new Set(Array.from(data.keys()))).forEach(function (name) {
      var values = data.getAll(name).filter(function (value) { return value !== ""; });
      if (values.length === data.getAll(name).length) return;
      data.delete(name);
      values.forEach(function (value) { data.append(name, value); });
    });
  });
})();

/* "More filters" stays as the person left it when a change swaps the results in (the
 * server opens it only when one of its filters is set). */
(function () {
  "use strict";
  var wasOpen = false;
  document.addEventListener("htmx:beforeSwap", function () {
    var more = document.querySelector("details.more-filters");
    wasOpen = Boolean(more && more.open);
  });
  document.addEventListener("htmx:afterSwap", function () {
    var more = document.querySelector("details.more-filters");
    if (more && wasOpen) more.open = true;
  });
})();

/* A box a phone folds under its heading (details.folds) is open on a wider screen, where
 * the stylesheet shows it whole anyway: a screen reader then hears "expanded", as it is. */
(function () {
  "use strict";
  var wide = window.matchMedia("(min-width: 48.0625rem)");
  function unfold() {
    if (!wide.matches) return;
    document.querySelectorAll("details.folds:not([open])").forEach(function (box) { box.open = true; });
  }
  document.addEventListener("DOMContentLoaded", unfold);
  document.addEventListener("htmx:afterSwap", unfold);
  wide.addEventListener("change", unfold);
})();
