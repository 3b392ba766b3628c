// A placeholder anywidget front-end, so scripts/check-js.sh has a real file to check and the browser
// smoke test (tests/browser/test_browser_smoke.py) has a widget to click. To be replaced by the real
// widgets. It draws a button that increments the synced `clicks` trait and shows its value.

/** @param {import("./anywidget-types").RenderProps} props */
function render({ model, el }) {
    const button = document.createElement("button");
    button.className = "eos-smoke-button";
    const label = () => {
        button.textContent = `clicks: ${model.get("clicks")}`;
    };
    label();
    button.addEventListener("click", () => {
        model.set("clicks", model.get("clicks") + 1);
        model.save_changes();
    });
    model.on("change:clicks", label);
    el.appendChild(button);
    return () => model.off("change:clicks", label);
}

export default { render };
