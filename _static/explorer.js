// The static book's explorers (pavlov.plotting.static_explorer): every control picks one value of its
// grid, and the frame drawn at that setting is shown. Runs offline, on every page, with no kernel.
document.addEventListener("DOMContentLoaded", () => {
  for (const explorer of document.querySelectorAll(".pavlov-explorer")) {
    const fields = [...explorer.querySelectorAll(".pavlov-explorer-controls label")];
    const frames = [...explorer.querySelectorAll("img.pavlov-explorer-frame")];
    const show = () => {
      const key = fields.map((label) => {
        const field = label.querySelector("select, input");
        return field ? field.value : "0";
      }).join(",");
      for (const label of fields) {
        const range = label.querySelector("input[type=range]");
        if (range) label.querySelector("output").textContent = JSON.parse(range.dataset.labels)[range.value];
      }
      for (const frame of frames) frame.hidden = !frame.dataset.keys.split(" ").includes(key);
    };
    explorer.addEventListener("input", show);
    explorer.addEventListener("change", show);
    show();
  }
});
