// Globals of the task board (examples/app/): the handle it leaves on window for debugging and tests.
interface Window {
  taskboard?: typeof import('../../examples/app/app.js').app;
}
