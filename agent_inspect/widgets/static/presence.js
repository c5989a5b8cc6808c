// A live tail's sign of life: while this view is on a page it tells the kernel every `heartbeat` seconds,
// so the tail keeps polling only while someone can see it (widgets/_tail.py is the kernel side).
export default {
  render({ model, el }) {
    el.classList.add("ai-live-presence");
    const beat = () => {
      try {
        model.send({ type: "seen" });
      } catch (error) {
        // no kernel behind the page (a saved notebook): nothing to keep alive
      }
    };
    beat();
    const timer = setInterval(beat, Math.max(0.05, model.get("heartbeat")) * 1000);
    return () => clearInterval(timer);
  },
};
