/* The researcher dashboard: copy buttons, no grid refresh while the keyboard is in the grid, and the new-study
   form's platform fields. */
(function () {
  "use strict";

  // No grid poll while the focus is in the grid: swapping it would drop the focus. (An event, not an
  // hx-trigger filter: filters need eval, which the Content-Security-Policy forbids.)
  window.gridIdle = function () {
    var grid = document.getElementById("grid");
    return !grid || !grid.contains(document.activeElement);
  };
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (e.detail && e.detail.elt && e.detail.elt.id === "grid" && !window.gridIdle()) { e.preventDefault(); }
  });

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
  // A table wider than its box scrolls inside it: the box takes the focus (so the keyboard can scroll it) and is
  // named after its table's caption or the heading before it.
  function scrollableTables(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll(".table-scroll"), function (box) {
      if (box.scrollWidth <= box.clientWidth + 1) { box.removeAttribute("tabindex"); return; }
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      var caption = box.querySelector("caption");
      var heading = box.previousElementSibling;
      while (heading && !/^H[1-6]$/.test(heading.tagName)) { heading = heading.previousElementSibling; }
      var name = caption ? caption.textContent : (heading ? heading.textContent : "Table");
      box.setAttribute("aria-label", name.trim() + " (scrolls sideways)");
    });
  }
  // The new-study form: each platform's own fields are shown while that platform is chosen.
  function platformSettings(form) {
    var chosen = form.querySelector('input[name="platform"]:checked');
    Array.prototype.forEach.call(form.querySelectorAll("[data-platform-settings]"), function (box) {
      box.hidden = !chosen || box.getAttribute("data-platform-settings") !== chosen.value;
    });
  }
  document.addEventListener("change", function (e) {
    if (e.target && e.target.name === "platform" && e.target.form) { platformSettings(e.target.form); }
  });
  function allPlatformSettings() {
    Array.prototype.forEach.call(document.querySelectorAll("form.study-form"), platformSettings);
  }
  document.addEventListener("DOMContentLoaded", allPlatformSettings);
  if (document.readyState !== "loading") { allPlatformSettings(); }
  document.addEventListener("DOMContentLoaded", function () { scrollableTables(document); });
  if (document.readyState !== "loading") { scrollableTables(document); }
  window.addEventListener("resize", function () { scrollableTables(document); });
  document.addEventListener("htmx:load", function (e) { scrollableTables(e.detail.elt.ownerDocument || document); });
})();
