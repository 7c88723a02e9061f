"""tune_en2ko_ts: English queries over the Korean TypeScript handbook pages (set B), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set (two
annotators, each over half of the passages: ts-ko-0000…0122, ts-ko-0123…0246); relevance-1 passages were found by
regex-grepping the whole corpus for the query's key terms (Korean words and the English identifiers the Korean
docs keep) and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of ts-ko-NNNN.
kind: term = keyword query, question = how-to / natural question, paraphrase = the situation in other words.
"""

Q = [
    # Everyday Types
    ("interface vs type alias: extends vs & intersection, adding fields to an existing interface",
     "term", "0016", "0018 0019"),
    ("why is an object property inferred as string instead of the literal \"GET\" when I pass it to a function "
     "expecting that literal type?",
     "question", "0023", "0024"),
    ("the compiler only knows the DOM lookup returns some generic page element, but I'm sure it's a drawing "
     "canvas; how do I override what it thinks the value is?",
     "paraphrase", "0020", "0198"),
    # More on Functions
    ("overload signatures vs implementation signature not callable from outside, must be compatible",
     "term", "0043", "0042"),
    ("why shouldn't I mark callback parameters like index as optional in a function type?",
     "question", "0041", "0070 0072"),
    ("passing an arrow function that returns a value, e.g. forEach(el => dst.push(el)), where the callback is "
     "supposed to give nothing back compiles fine - why no error?",
     "paraphrase", "0054", ""),
    # Generics
    ("generic constraint Type extends Lengthwise interface to access .length property", "term", "0061", "0035"),
    ("Key extends keyof Type constraint getProperty(obj, key)", "term", "0062", "0064"),
    ("how do I write a generic factory function that takes a class constructor and returns an instance of that "
     "class?",
     "question", "0063", "0032"),
    # Keyof Type Operator
    ("keyof on a type with string or number index signature result", "term", "0064", ""),
    # Typeof Type Operator
    ("typeof type operator ReturnType<typeof f> function return type", "term", "0065", "0066"),
    # Indexed Access Types
    ("how do I extract the element type from a const array of objects as a type?", "question", "0067", "0065"),
    # Type Compatibility
    ("strictFunctionTypes function parameter bivariance unsound callback parameter", "term", "0071", ""),
    ("why can a function with fewer parameters be assigned to a function type that takes more parameters?",
     "question", "0070", "0069 0041"),
    ("two classes with identical fields refuse to be assigned to each other when they have a hidden internal "
     "field",
     "paraphrase", "0074", "0073"),
    # Type Inference
    ("best common type inference array of mixed class instances union", "term", "0078", "0080"),
    ("when I assign a function to window.onmousedown the editor already knows what the event argument is without "
     "me annotating it - how?",
     "paraphrase", "0079", "0008 0080"),
    # Iterators and Generators
    ("what is the difference between for..of and for..in when looping over an array or a Set?", "question", "0082", ""),
    ("for..of downlevel ES5 ES3 target generated code non-array iterable error", "term", "0083", ""),
    # Symbols
    ("Symbol() unique symbol as object property key and computed class method", "term", "0084", "0029"),
    # Namespaces
    ("tsc --outFile concatenate multi-file namespace output order reference path", "term", "0089", "0088 0094"),
    ("how do I create a shorter alias for a nested namespace like Shapes.Polygons?", "question", "0090", ""),
    ("declare namespace ambient declaration .d.ts for global script library like d3", "term", "0092", "0091 0135"),
    # Triple-Slash Directives
    ("/// <reference types=\"node\" /> declare @types package dependency in d.ts", "term", "0096", "0122"),
    ("how can I enable a built-in lib like es2017.string for just one file instead of in tsconfig?",
     "question", "0097", ""),
    # Configuring Watch
    ("the compiler's auto-rebuild mode keeps scanning files over and over and burns CPU; can the project config "
     "make it rely on operating system change notifications instead?",
     "paraphrase", "0102", "0101 0103"),
    ("TSC_WATCHDIRECTORY environment variable recursive directory watching polling", "term", "0104", "0101"),
    # JSDoc Reference
    ("JSDoc @param optional parameter brackets default value and @returns type", "term", "0109", "0111"),
    ("how do I declare a generic function with type parameters in a JavaScript file using JSDoc?",
     "question", "0112", ""),
    ("in a plain .js file, reuse a type defined in another module inside my doc comments without converting to "
     "TypeScript",
     "paraphrase", "0108", ""),
    # Publishing
    ("package.json types typings field pointing to bundled .d.ts declaration file for npm", "term", "0120", "0123"),
    ("should @types packages go in dependencies or devDependencies when publishing a library with declarations?",
     "question", "0121", ""),
    # Publishing
    ("typesVersions package.json redirect .d.ts to ts3.1 folder by TypeScript version", "term", "0123", "0124"),
    ("why is my typesVersions entry for >=3.2 ignored when the >=3.1 range is listed before it?",
     "question", "0124", "0123"),
    # Library Structures
    ("identify UMD library typeof define.amd module.exports root factory wrapper", "term", "0133", "0132"),
    ("old script loaded with a script tag just defines top-level functions and assigns to window, never calls "
     "require; what kind of library is this for typing it",
     "paraphrase", "0131", "0130"),
    ("which declaration template should I use when the required module is invoked like a function or "
     "instantiated with new?",
     "question", "0129", ""),
    ("esModuleInterop callable module import express() ES6 module object not callable default export",
     "term", "0136", ""),
    # Variable Declaration
    ("my loop schedules delayed callbacks and every one of them prints the final counter value instead of its "
     "own iteration number",
     "paraphrase", "0139", "0143"),
    ("let block scoping temporal dead zone use before declaration catch clause variable", "term", "0140", ""),
    ("object destructuring rename property a: newName1 where to put the type annotation", "term", "0149", "0148 0053"),
    ("why can I still modify fields of an object declared with const, and should I prefer const over let?",
     "question", "0144", "0143"),
    # Modules
    ("export = and import x = require() CommonJS AMD replace exports object single class", "term", "0158", "0159 0240"),
    ("wildcard module declaration declare module \"*!text\" json! loader plugin import non-JavaScript content",
     "term", "0167", ""),
    ("how do I load a module conditionally at runtime with require but keep type safety using typeof on the "
     "import?",
     "question", "0163", "0162 0164"),
    ("how can I import a brand-new npm package that has no type definitions without writing a full declaration "
     "file?",
     "question", "0166", "0239 0165"),
    # Module Resolution
    ("moduleResolution node relative import lookup order .ts .tsx .d.ts package.json types field index.d.ts",
     "term", "0182", "0180 0183"),
    ("tsconfig paths mapping baseUrl jquery node_modules/jquery/dist alias", "term", "0186", "0185 0187"),
    ("build step copies generated template code into the same output folder as my view files, so a relative "
     "import between them only works after the build; how do I make the compiler accept it",
     "paraphrase", "0189", "0190"),
    ("why does the compiler still pick up a file I listed in the tsconfig exclude array?", "question", "0195", ""),
    # JSX
    ("JSX.IntrinsicElements declare namespace JSX intrinsic element type checking string index signature",
     "term", "0200", "0204 0199"),
    ("jsx compiler option preserve react react-native react-jsx emitted output and file extension", "term", "0197", ""),
    ("why can't I use angle-bracket <Type> casts in a .tsx file?", "question", "0198", "0020"),
    ("how does the compiler tell a built-in HTML tag apart from one of my own components in markup, and why does "
     "the first letter's case matter",
     "paraphrase", "0199", "0200 0201"),
    # The Basics
    ("tsc still writes the .js output even though my code has type errors; how do I stop it from emitting?",
     "question", "0217", "0237"),
    ("downleveling template literals --target es2015 default ES3 compile target", "term", "0221", "0220"),
    ("plain JavaScript just hands back undefined when I read a field the object doesn't have, and misspelled "
     "method names or forgotten call parentheses slip through unnoticed",
     "paraphrase", "0213", ""),
    # TypeScript for JavaScript Programmers
    ("structural typing duck typing shape compatibility object literal class instance passed to interface Point",
     "term", "0232", "0068 0015"),
    ("union type string | string[] parameter narrowing typeof Array.isArray predicates", "term", "0229", "0230 0012"),
    ("how do I declare the shape of an object with an interface and make a class instance conform to it?",
     "question", "0227", "0015 0228"),
    # Migrating from JavaScript
    ("tsconfig allowJs outDir built include src target es5 converting JavaScript project", "term", "0234", "0233"),
    ("how do I fix Cannot find module 'lodash' after switching from require to import syntax?",
     "question", "0239", "0166"),
    ("I create an empty object and then add fields to it one at a time, and the compiler says those fields don't "
     "exist on it",
     "paraphrase", "0242", ""),
    ("noImplicitThis this parameter function assigned to prototype implicit any", "term", "0246", "0045"),
]
