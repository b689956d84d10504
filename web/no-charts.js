/* Stands in for the charting library in a build without npm: the dashboard shows tables. */
window.uPlot = null;
