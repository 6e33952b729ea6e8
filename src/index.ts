/**
 * The package's main entry point (`peer-registry`): the client, which is what a program
 * imports from this package. The peer itself runs as a process (`npm start`, dist/main.js).
 */
export * from './client/index.js';
