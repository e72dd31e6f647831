/* The navigation and page-contents buttons work at every width.
   pydata-sphinx-theme binds its drawers to the first .primary-toggle and .secondary-toggle of
   the page, which sit in the top bar course.css hides (it only repeats the search box). A click
   on any other toggle, such as the article header's, is handed to that first one. */
document.addEventListener(
  "click",
  (event) => {
    for (const kind of ["primary", "secondary"]) {
      const first = document.querySelector(`.${kind}-toggle`);
      const clicked = event.target.closest(`.${kind}-toggle`);
      if (first && clicked && clicked !== first) {
        event.preventDefault();
        event.stopPropagation();
        first.click();
      }
    }
  },
  true,
);
