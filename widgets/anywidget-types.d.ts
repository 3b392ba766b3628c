// Types of anywidget's render props, for type checking the plain-ES-module front-ends in widgets/
// with tsc --checkJs (scripts/check-js.sh). Annotate a module's render function with:
//
//   /** @param {import("./anywidget-types").RenderProps} props */
//   function render({ model, el }) { ... }
//   export default { render };

/** The widget's model, as anywidget hands it to render(): the synced traits of the Python class. */
export interface AnyModel {
    /** The current value of a synced trait. */
    get(name: string): any;
    /** Set a trait locally; save_changes() sends it to the kernel. */
    set(name: string, value: any): void;
    /** Send the traits set since the last call to the kernel. */
    save_changes(): void;
    /** Listen: "change:<trait>" for a trait, "msg:custom" for a message sent with Widget.send(). */
    on(event: string, cb: (...a: any[]) => void): void;
    /** Stop listening: one callback, every callback of an event, or everything. */
    off(event?: string, cb?: Function): void;
    /** Send a custom message to the kernel (received by the Python widget's on_msg handlers). */
    send(content: any, callbacks?: any, buffers?: any[]): void;
}

/** What render() receives. */
export interface RenderProps {
    model: AnyModel;
    /** The element to draw into; it belongs to this view only. */
    el: HTMLElement;
}

/** render() may return a cleanup function, called when the view is removed. */
export type Render = (props: RenderProps) => void | (() => void) | Promise<void | (() => void)>;
