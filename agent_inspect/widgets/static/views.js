// The views' stylesheet comes in as this widget's _css; the widget itself shows nothing.
export default {
  render({ el }) {
    el.classList.add("ai-view-style");
  },
};
