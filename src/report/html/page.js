(function () {
  "use strict";
  var box = document.getElementById("filter-box");
  var input = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var rows = document.querySelectorAll("#matrix tbody tr");
  function apply() {
    var q = input.value.trim().toLowerCase();
    var n = 0;
    for (var i = 0; i < rows.length; i++) {
      var hit = !q || rows[i].textContent.toLowerCase().indexOf(q) >= 0;
      rows[i].hidden = !hit;
      if (hit) { n++; }
    }
    shown.textContent = q ? n + " of " + rows.length : "";
  }
  if (box && input && shown) {
    box.hidden = false;
    input.addEventListener("input", apply);
    var params = new URLSearchParams(window.location.search);
    if (params.has("q")) { input.value = params.get("q") || ""; apply(); }
  }
})();
