/* SPDX-License-Identifier: MIT */
// JS README example "Model steps" in C++ (examples/model_steps.c): a model
// root is built once and its steps and state variables are copied into three
// roots with copy_from(), before execute() and again as sub-steps of a
// running step. The three roots take turns one step at a time.
//
// The state variable is a type whose default value is the model's
// ("Vanilla"): copy_from() re-creates it in each root value-initialized.
#include <futoin/asyncsteps.hpp>

#include <cstdio>
#include <string>
#include <vector>

using futoin::Steps;

namespace {

struct Var {
    std::string text = "Vanilla";
};

// The model's only step: captureless, so that copies may share it.
void model_step(Steps& as)
{
    Var* var = as.state<Var>("var");
    std::puts("-----");
    std::puts("Hi! I am from model_as");
    std::printf("State.var: %s\n", var->text.c_str());
    var->text = "Dirty";
    as.success();
}

} // namespace

int main()
{
    futoin::Loop loop;

    futoin::Root model(loop); // never executed: just a template
    model.state<Var>("var");
    model.add(&model_step);

    std::vector<futoin::Root> roots;
    for (int i = 0; i < 3; ++i) {
        futoin::Root& root = roots.emplace_back(loop);
        root.copy_from(model);
        // One pointer-sized capture: the step travels in its data.
        root.add([m = model.handle()](Steps& as) {
            as.add([](Steps& as) {
                std::puts(">> The first inner step");
                as.success();
            });
            as.copy_from(Steps(m)); // the model's steps become sub-steps
            as.success_step();
        });
        root.execute();
    }

    loop.run();
    roots.clear(); // the roots before the model they share steps with
    return 0;
}
