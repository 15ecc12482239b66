// The body of a LivePlot's js_on_load (ui/figures.py): `element`, `props` and `watch` are Gradio's.
// Each new figure is drawn into the same plot with Plotly.react, which changes only what changed;
// gr.Plot mounts a new plot for every value, drawing each figure twice from nothing.
const host = element.querySelector(".live-plot-host");
const touch = window.matchMedia("(pointer: coarse)").matches;
let drawn = null;
// Gradio loads Plotly.js with its first gr.Plot; a page that has none yet loads the same module.
const loadPlotly = () => {
  if (window.Plotly || window.__logitspecPlotly) return;
  const index = document.querySelector('script[src*="/assets/index-"]');
  if (!index) return;
  window.__logitspecPlotly = import(new URL("__PLOTLY_CHUNK__", index.src).href).catch(() => null);
};
const draw = () => {
  const value = props.value;
  if (!value || value === drawn) return;
  if (!window.Plotly) {
    loadPlotly();
    setTimeout(draw, 50);
    return;
  }
  drawn = value;
  const fig = JSON.parse(value);
  // As gr.Plot lays a figure out: the container's width, margins grown to fit their labels.
  const layout = Object.assign({}, fig.layout, {autosize: true});
  layout.margin = Object.assign({}, layout.margin, {autoexpand: true});
  if (touch) layout.dragmode = false;  // a swipe over a plot scrolls the page (figures.js)
  window.Plotly.react(host, fig.data || [], layout, Object.assign({responsive: true}, fig.config));
};
draw();
watch("value", draw);
