/* The review inbox: a "tick every learning on this page" box above the ticks. Without
 * JavaScript it stays hidden and each learning is ticked on its own. */
(function () {
  "use strict";

  function wire(root) {
    var boxes = root.querySelectorAll ? root.querySelectorAll("input[data-tick-all]") : [];
    boxes.forEach(function (all) {
      if (all.dataset.wired) return;
      all.dataset.wired = "1";
      all.hidden = false;
      var form = all.form;
      var name = all.dataset.tickAll;
      all.addEventListener("change", function () {
        form.querySelectorAll('input[type="checkbox"][name="' + name + '"]').forEach(function (box) {
          box.checked = all.checked;
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("htmx:afterSwap", function () { wire(document); });
})();
