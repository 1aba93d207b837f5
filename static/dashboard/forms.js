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
