/* The researcher dashboard: copy buttons, and no grid refresh while the keyboard is in the grid. */
(function () {
  "use strict";

  // htmx's poll filter (hx-trigger="every 3s [gridIdle()]"): swapping the grid would drop the focus.
  window.gridIdle = function () {
    var grid = document.getElementById("grid");
    return !grid || !grid.contains(document.activeElement);
  };

  function copy(button) {
    var target = document.querySelector(button.getAttribute("data-copy"));
    if (!target) { return; }
    var text = "value" in target ? target.value : target.textContent;
    var done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { target.select && target.select(); });
    } else if (target.select) {
      target.select();
      try { document.execCommand("copy"); done(); } catch (err) { /* the text stays selected */ }
    }
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest ? e.target.closest("[data-copy]") : null;
    if (button) { copy(button); }
  });
})();
